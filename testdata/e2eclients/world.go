package main

import (
	"os"
	"path/filepath"
	"sort"
)

// world is one run's throwaway directories and environment.
type world struct {
	root string
	env  RunEnv
	base []string // the environment agentctl and the client run with
}

func newWorld(parent, binDir string) (*world, error) {
	root, err := os.MkdirTemp(parent, "agentctl-e2e-")
	if err != nil {
		return nil, err
	}
	w := &world{root: root}
	home := filepath.Join(root, "home")
	w.env = RunEnv{
		Home:      home,
		Workspace: filepath.Join(root, "workspace"),
		ConfigDir: filepath.Join(home, ".config"),
		DataDir:   filepath.Join(home, ".local", "share"),
		CacheDir:  filepath.Join(home, ".cache"),
		StateDir:  filepath.Join(home, ".local", "state"),
	}
	agentctlState := filepath.Join(root, "agentctl-state")
	tmp := filepath.Join(root, "tmp")
	for _, d := range []string{root, home, w.env.Workspace, w.env.ConfigDir, w.env.DataDir, w.env.CacheDir, w.env.StateDir, agentctlState, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, err
		}
	}
	w.base = []string{
		"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + w.env.ConfigDir,
		"XDG_DATA_HOME=" + w.env.DataDir,
		"XDG_CACHE_HOME=" + w.env.CacheDir,
		"XDG_STATE_HOME=" + w.env.StateDir,
		"AGENTCTL_STATE_DIR=" + agentctlState,
		"TMPDIR=" + tmp,
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
	}
	for _, k := range []string{"USER", "LOGNAME", "SHELL", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			w.base = append(w.base, k+"="+v)
		}
	}
	return w, nil
}

func (w *world) path(name string) string { return filepath.Join(w.root, name) }

// files lists the files under HOME (as ~/PATH) and the workspace (as ./PATH).
func (w *world) files() []string {
	var list []string
	for dir, prefix := range map[string]string{w.env.Home: "~/", w.env.Workspace: "./"} {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, path)
				list = append(list, prefix+filepath.ToSlash(rel))
			}
			return nil
		})
	}
	return list
}

// newFiles are the files in after that are not in before, sorted.
func newFiles(before, after []string) []string {
	had := map[string]bool{}
	for _, f := range before {
		had[f] = true
	}
	var added []string
	for _, f := range after {
		if !had[f] {
			added = append(added, f)
		}
	}
	sort.Strings(added)
	return added
}

// clientEnv is the base environment with the client's own variables.
func (w *world) clientEnv() []string {
	env := append([]string(nil), w.base...)
	for k, v := range w.env.Env {
		env = append(env, k+"="+v)
	}
	return env
}
