package kb

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

func workers(n int) int {
	return max(1, min(n, 2*runtime.GOMAXPROCS(0), 16))
}

// forEach calls fn(worker, i) for i in [0, n) on a few goroutines; worker
// identifies the goroutine (for scratch space).
func forEach(ctx context.Context, n int, fn func(worker, i int)) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers(n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				fn(w, i)
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}
