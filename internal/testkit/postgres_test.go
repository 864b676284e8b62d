package testkit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) {
	if os.Getenv("TESTKIT_POSTGRES_CHILD") != "" {
		// The process TestPostgresDiesWithTest kills: it starts a server
		// and waits for its end.
		runPostgresChild()
		return
	}
	code := m.Run()
	StopSharedPostgres()
	os.Exit(code)
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func exec1(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestPostgres(t *testing.T) {
	p := StartPostgres(t)
	a, b := p.NewDatabase(t), p.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases, one URL: %s", a)
	}
	if !strings.Contains(a, ":"+p.Password()+"@") || p.Password() == "" {
		t.Errorf("URL %s lacks the password %q", a, p.Password())
	}
	ctx := context.Background()

	ca, cb := connect(t, a), connect(t, b)
	exec1(t, ca, "CREATE TABLE only_a (v text)")
	exec1(t, cb, "CREATE TABLE only_b (v text)")
	exec1(t, ca, "INSERT INTO only_a VALUES ('acknowledged')")
	for _, c := range []struct {
		conn        *pgx.Conn
		mine, other string
	}{{ca, "only_a", "only_b"}, {cb, "only_b", "only_a"}} {
		var mine, other *string
		if err := c.conn.QueryRow(ctx, "SELECT to_regclass($1)::text, to_regclass($2)::text", c.mine, c.other).Scan(&mine, &other); err != nil {
			t.Fatal(err)
		}
		if mine == nil || other != nil {
			t.Errorf("database with %s sees %s: %v, %s: %v", c.mine, c.mine, mine != nil, c.other, other != nil)
		}
	}

	// The password is asked for.
	wrong := strings.Replace(a, p.Password(), "wrong", 1)
	if conn, err := pgx.Connect(ctx, wrong); err == nil {
		conn.Close(ctx)
		t.Error("connected with a wrong password")
	}

	// What was committed survives an immediate stop.
	port := p.Port()
	p.Stop(t)
	if err := ca.Ping(ctx); err == nil {
		t.Error("a session survived the stop")
	}
	p.Start(t)
	if p.Port() != port {
		t.Errorf("port %d after the restart, %d before", p.Port(), port)
	}
	var v string
	if err := connect(t, a).QueryRow(ctx, "SELECT v FROM only_a").Scan(&v); err != nil || v != "acknowledged" {
		t.Errorf("after the restart: %q, %v", v, err)
	}
}

func TestSharedPostgres(t *testing.T) {
	p := SharedPostgres(t)
	if q := SharedPostgres(t); q != p {
		t.Fatal("two shared servers")
	}
	var n int
	if err := connect(t, p.NewDatabase(t)).QueryRow(context.Background(), "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("SELECT 1: %d, %v", n, err)
	}
}

func TestFindPostgres(t *testing.T) {
	_, err := findPostgres("", filepath.Join(t.TempDir(), "*", "bin"))
	if err == nil || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("no PostgreSQL: %v", err)
	}

	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	program := func(path string) {
		WriteFiles(t, filepath.Dir(path), map[string]string{filepath.Base(path) + exeSuffix(): ""})
		if err := os.Chmod(path+exeSuffix(), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{"9.6", "10", "15"} {
		program(filepath.Join(lib, v, "bin", "initdb"))
		program(filepath.Join(lib, v, "bin", "postgres"))
	}
	program(filepath.Join(lib, "16", "bin", "initdb")) // no server
	if got, err := findPostgres("", filepath.Join(lib, "*", "bin")); got != filepath.Join(lib, "15", "bin") {
		t.Errorf("of the versions: %s, %v", got, err)
	}

	// On PATH first, followed to the programs' directory when a link.
	path := filepath.Join(dir, "bin")
	if runtime.GOOS != "windows" {
		os.Mkdir(path, 0o755)
		if err := os.Symlink(filepath.Join(lib, "10", "bin", "initdb"), filepath.Join(path, "initdb")); err != nil {
			t.Fatal(err)
		}
		if got, err := findPostgres(string(filepath.ListSeparator)+path, filepath.Join(lib, "*", "bin")); got != filepath.Join(lib, "10", "bin") {
			t.Errorf("linked from PATH: %s, %v", got, err)
		}
	}
}

func TestDatabaseName(t *testing.T) {
	for name, want := range map[string]string{
		"TestA/b c-D":           "testa_b_c_d_7",
		strings.Repeat("x", 80): strings.Repeat("x", 61) + "_7",
	} {
		if got := databaseName(name, 7); got != want {
			t.Errorf("databaseName(%q) = %q, want %q", name, got, want)
		}
	}
}

// The server does not outlive a test process killed, and a later run
// removes the directory it left.
func TestPostgresDiesWithTest(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the server is stopped with its test process on Linux only")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TESTKIT_POSTGRES_CHILD=1")
	cmd.Stderr = os.Stderr
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	var dir string
	line, err := bufio.NewReader(out).ReadString('\n')
	if _, err2 := fmt.Sscanf(line, "%d %s", &pid, &dir); err != nil || err2 != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child said %q: %v, %v", line, err, err2)
	}
	cmd.Process.Kill()
	cmd.Wait()
	Eventually(t, "the server to stop", func() bool { return !Alive(pid) })
	Eventually(t, "the directory's removal", func() bool {
		removeStalePostgres()
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	})
}

func runPostgresChild() {
	p, err := startPostgres()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%d %s\n", p.cmd.Process.Pid, p.dir)
	io.Copy(io.Discard, os.Stdin) // until the test process is gone
	p.close()
}
