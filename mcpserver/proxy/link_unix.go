//go:build unix

package proxy

import "syscall"

// canTryWrite: a pipe's descriptor can be written without blocking.
const canTryWrite = true

// writeNonblock writes what fd takes now; 0 bytes when it takes nothing.
func writeNonblock(fd uintptr, b []byte) (int, error) {
	for {
		n, err := syscall.Write(int(fd), b)
		switch err {
		case nil:
			return n, nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, nil
		}
		return 0, err
	}
}
