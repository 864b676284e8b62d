package testkit

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresUser is the superuser role of every [Postgres], made by initdb.
const PostgresUser = "agentctl"

// postgresLibBins is where Debian and Ubuntu put each installed major
// version's programs, which they do not put on PATH.
const postgresLibBins = "/usr/lib/postgresql/*/bin"

// postgresDirPrefix names the temporary directories of the servers, so
// that a later run can find those a killed test process left behind.
const postgresDirPrefix = "agentctl-postgres-"

// Postgres is a throw-away PostgreSQL server of the tests' own, made by
// initdb in a temporary directory and listening on a free loopback port
// only: tests need a real server, and one of their own neither depends
// on nor disturbs one the machine may run. It is tuned for speed (no
// fsync), keeping what a crash test needs: a commit acknowledged is in the
// WAL, which survives an immediate stop ([Postgres.Stop]).
//
// Its postmaster is a child of the test process (not pg_ctl's daemon),
// stopped when that process dies, however it dies (on Linux).
type Postgres struct {
	bin      string  // directory of initdb and postgres
	dir      string  // temporary directory: data/, postgres.log
	as       *osUser // whom the programs run as; nil: the test process's user
	port     int
	password string

	mu     sync.Mutex
	cmd    *exec.Cmd     // the running postmaster; nil when stopped
	exited chan struct{} // closed once cmd has exited
}

// osUser is an operating-system user to run PostgreSQL's programs as.
type osUser struct{ uid, gid uint32 }

// StartPostgres starts a new [Postgres], stopped and removed when tb ends.
// Tests that need no server of their own share one with [SharedPostgres].
// It fails tb, saying how to install them, when PostgreSQL's programs are
// not on the machine: a test needing them must not pass without running.
func StartPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	p, err := startPostgres()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.close)
	return p
}

var shared struct {
	once    sync.Once
	p       *Postgres
	err     error
	stopped bool
}

// SharedPostgres returns the test binary's one [Postgres], started by its
// first call: starting a server takes a second or so, a database of its
// own ([Postgres.NewDatabase]) a fraction of that. A package using it
// stops it from its TestMain, after m.Run, with [StopSharedPostgres]
// (else the server dies with the test process but its directory stays).
// Tests must not stop a shared server: start one with [StartPostgres].
func SharedPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	shared.once.Do(func() { shared.p, shared.err = startPostgres() })
	if shared.stopped {
		tb.Fatal("SharedPostgres called after StopSharedPostgres")
	}
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.p
}

// StopSharedPostgres stops the server [SharedPostgres] started, if it did,
// and removes its directory. Later calls of SharedPostgres fail.
func StopSharedPostgres() {
	shared.once.Do(func() {}) // orders this after a start under way
	shared.stopped = true
	if shared.p != nil {
		shared.p.close()
	}
}

// Port is the loopback TCP port the server listens on, the same after a
// restart.
func (p *Postgres) Port() int { return p.port }

// Password is [PostgresUser]'s password, made at random for each server:
// the server asks for it (scram-sha-256), so its URLs carry it, as real
// ones do, for tests of what hides a password.
func (p *Postgres) Password() string { return p.password }

// URL is the URL of database db as [PostgresUser], with the password.
func (p *Postgres) URL(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(PostgresUser, p.password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

var databases atomic.Int64

// NewDatabase creates an empty database of its own for tb, named after tb
// (for reading the server's log), and returns its URL. It is dropped when
// tb ends, so that a test binary's many tests do not fill the disk.
func (p *Postgres) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := databaseName(tb.Name(), databases.Add(1))
	if err := p.admin("CREATE DATABASE " + pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if !p.running() {
			return // stopped by the test, or already by its cleanup
		}
		// FORCE ends the sessions a test left open (PostgreSQL 13 on).
		if err := p.admin("DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"); err != nil {
			tb.Logf("drop database %s: %v", name, err)
		}
	})
	return p.URL(name)
}

// databaseName makes a database's name of a test's name and a number
// unique in the process, within PostgreSQL's 63 bytes.
func databaseName(test string, n int64) string {
	suffix := "_" + strconv.FormatInt(n, 10)
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		if b.Len()+len(suffix) >= 63 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String() + suffix
}

// admin runs sql in the postgres database.
func (p *Postgres) admin(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// Stop stops the server in immediate mode, as `pg_ctl stop -m immediate`
// does: the server's processes quit at once, as in a crash, and the next
// [Postgres.Start] recovers from the WAL.
func (p *Postgres) Stop(tb testing.TB) {
	tb.Helper()
	if !p.running() {
		tb.Fatal("Postgres.Stop: the server is not running")
	}
	if err := p.stop(); err != nil {
		tb.Fatal(err)
	}
}

// Start starts the stopped server again, on the same port and data.
func (p *Postgres) Start(tb testing.TB) {
	tb.Helper()
	if p.running() {
		tb.Fatal("Postgres.Start: the server is running")
	}
	if err := p.start(); err != nil {
		tb.Fatal(err)
	}
}

func (p *Postgres) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// startPostgres makes a data directory with initdb and starts a server on
// it.
func startPostgres() (*Postgres, error) {
	bin, err := findPostgres(os.Getenv("PATH"), postgresLibBins)
	if err != nil {
		return nil, err
	}
	as, err := postgresRunAs()
	if err != nil {
		return nil, err
	}
	removeStalePostgres()
	dir, err := os.MkdirTemp("", postgresDirPrefix)
	if err != nil {
		return nil, err
	}
	p := &Postgres{bin: bin, dir: dir, as: as}
	if err := p.initdb(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// Another process may take the free port before the server does: then
	// it is another port's turn.
	for try := 1; ; try++ {
		if p.port, err = freePort(); err == nil {
			err = p.start()
		}
		if err == nil || try == 5 || !errors.Is(err, errPortTaken) {
			break
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

// postgresRunAs is whom PostgreSQL's programs run as: the test process's
// user, unless that is root, which initdb and postgres refuse; then the
// postgres user the PostgreSQL packages make.
func postgresRunAs() (*osUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	if runtime.GOOS != "linux" {
		return nil, errors.New("the tests run as root, which PostgreSQL refuses: run them as another user")
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("the tests run as root, which PostgreSQL refuses, and there is no postgres user to run it as (apt-get install postgresql makes one): %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("the postgres user: %w", err)
	}
	return &osUser{uid: uint32(uid), gid: uint32(gid)}, nil
}

// findPostgres returns the directory holding PostgreSQL's initdb and
// postgres: the first on path (a PATH list) with initdb, else the highest
// version's of the directories libBins (a glob) matches.
func findPostgres(path, libBins string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		initdb := filepath.Join(dir, "initdb"+exeSuffix())
		if !isProgram(initdb) {
			continue
		}
		// initdb may be a link into the directory of the programs (as
		// /usr/local/bin/initdb -> /usr/lib/postgresql/15/bin/initdb).
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			if d := filepath.Dir(real); isProgram(filepath.Join(d, "postgres"+exeSuffix())) {
				return d, nil
			}
		}
		if isProgram(filepath.Join(dir, "postgres"+exeSuffix())) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(libBins)
	slices.SortFunc(dirs, func(a, b string) int { // highest version first
		return compareVersions(filepath.Base(filepath.Dir(b)), filepath.Base(filepath.Dir(a)))
	})
	for _, dir := range dirs {
		if isProgram(filepath.Join(dir, "initdb"+exeSuffix())) && isProgram(filepath.Join(dir, "postgres"+exeSuffix())) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("the tests need PostgreSQL's programs (initdb, postgres) to start a throw-away server, and found them neither on PATH nor in %s: install them (Debian, Ubuntu: apt-get install postgresql; macOS: brew install postgresql) or put their directory on PATH", libBins)
}

// compareVersions orders versions such as 9.6, 10 and 15 by their numbers.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return strings.Compare(a, b)
}

func isProgram(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0)
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

func (p *Postgres) data() string    { return filepath.Join(p.dir, "data") }
func (p *Postgres) logFile() string { return filepath.Join(p.dir, "postgres.log") }

// initdb makes the data directory: C locale and no syncing, for speed.
func (p *Postgres) initdb() error {
	// The owner file tells a later run whether the directory is left over
	// ([removeStalePostgres]).
	if err := os.WriteFile(filepath.Join(p.dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	p.password = rand.Text()
	pwfile := filepath.Join(p.dir, "password")
	if err := os.WriteFile(pwfile, []byte(p.password+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(pwfile)
	if err := os.Mkdir(p.data(), 0o700); err != nil {
		return err
	}
	if p.as != nil {
		// The postgres user needs to reach the directory and own its data.
		if err := os.Chmod(p.dir, 0o755); err != nil {
			return err
		}
		for _, f := range []string{pwfile, p.data()} {
			if err := os.Chown(f, int(p.as.uid), int(p.as.gid)); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*Wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, "initdb"+exeSuffix()),
		"-D", p.data(), "-U", PostgresUser, "--pwfile", pwfile,
		"--auth-local", "trust", "--auth-host", "scram-sha-256",
		"-E", "UTF8", "--locale", "C", "--no-sync")
	cmd.Dir, cmd.SysProcAttr = p.dir, postgresAttr(p.as, false)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb (%s): %v\n%s", p.bin, err, out)
	}
	return nil
}

// errPortTaken is why a server did not start when its port was taken.
var errPortTaken = errors.New("port taken")

// start starts the postmaster on p.port and waits until it answers a
// query.
func (p *Postgres) start() error {
	log, err := os.OpenFile(p.logFile(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	logStart, _ := log.Seek(0, io.SeekEnd)
	cmd := exec.Command(filepath.Join(p.bin, "postgres"+exeSuffix()), "-D", p.data(),
		"-p", strconv.Itoa(p.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=", // TCP only: no socket file to place
		"-c", "max_connections=200", // tests running in parallel, each a pool
		// Losing data to an OS crash does not matter here, only to a crash
		// of the server's (see Stop), which a write to the WAL survives.
		"-c", "fsync=off",
		"-c", "full_page_writes=off",
	)
	cmd.Dir, cmd.Stdout, cmd.Stderr = p.dir, log, log
	cmd.SysProcAttr = postgresAttr(p.as, true)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()

	deadline := time.Now().Add(Wait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := ping(ctx, p.URL("postgres"))
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			p.mu.Lock()
			p.cmd = nil
			p.mu.Unlock()
			log := p.logSince(logStart)
			if strings.Contains(log, "could not bind") || strings.Contains(log, "could not create any TCP/IP sockets") {
				return fmt.Errorf("postgres on port %d: %w:\n%s", p.port, errPortTaken, log)
			}
			return fmt.Errorf("postgres exited before it was ready (%s):\n%s", cmd.ProcessState, log)
		default:
		}
		if time.Now().After(deadline) {
			p.stop()
			return fmt.Errorf("postgres not ready after %v: %v\n%s", Wait, err, p.logSince(logStart))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ping(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "SELECT 1")
	return err
}

// logSince returns what the server logged from offset on.
func (p *Postgres) logSince(offset int64) string {
	b, _ := os.ReadFile(p.logFile())
	if offset < int64(len(b)) {
		b = b[offset:]
	}
	return string(bytes.TrimSpace(b))
}

// stop stops the postmaster in immediate mode (SIGQUIT) and waits until it
// has exited; a postmaster that has not after [Wait] is killed.
func (p *Postgres) stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		cmd.Process.Kill() // no SIGQUIT (Windows), or already gone
	}
	select {
	case <-exited:
		return nil
	case <-time.After(Wait):
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("postgres did not stop within %v of SIGQUIT; killed", Wait)
	}
}

// close stops the server and removes its directory.
func (p *Postgres) close() {
	if err := p.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testkit:", err)
	}
	os.RemoveAll(p.dir)
}

// removeStalePostgres removes the directories of servers whose test
// process died without removing them (killed, or no StopSharedPostgres):
// those whose owner process is gone and whose postmaster is not running.
// It leaves alone any it is unsure of.
func removeStalePostgres() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), postgresDirPrefix+"*"))
	for _, dir := range dirs {
		if !pidFileGone(filepath.Join(dir, "owner.pid")) {
			continue
		}
		// postmaster.pid outlives a killed postmaster; its pid may be
		// another process's by now, which only delays the removal.
		if pm := filepath.Join(dir, "data", "postmaster.pid"); fileExists(pm) && !pidFileGone(pm) {
			continue
		}
		os.RemoveAll(dir)
	}
}

// pidFileGone reports whether file names (on its first line) a process
// that no longer exists.
func pidFileGone(file string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return false
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return true // Windows: no such process
	}
	defer proc.Release()
	// Not Alive: a process of another user's, which the signal may not
	// reach (EPERM), is not gone.
	err = proc.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// freePort returns a loopback TCP port no one listens on now, below the
// kernel's ephemeral range where it can: a server stopped and started again
// ([Postgres.Stop], [Postgres.Start]) keeps its port, and a port the kernel
// hands out to connections and listen(":0") could be taken meanwhile by
// any other test.
func freePort() (int, error) {
	if lo := ephemeralLow(); lo > 2048 {
		for range 20 {
			port := 1024 + int(mrand.N(uint(lo-1024)))
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				l.Close()
				return port, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow is the first port of Linux's ephemeral range, or 0.
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	lo, _ := strconv.Atoi(f[0])
	return lo
}
