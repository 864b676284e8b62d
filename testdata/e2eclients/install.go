package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// installDir is where a client's pinned package is installed in the cache.
func (h *harness) installDir(c Client) string {
	return filepath.Join(h.cache, strings.NewReplacer("@", "_", "/", "_").Replace(c.Package)+"_"+c.Version)
}

// installedVersion is the version of pkg installed under dir, or "".
func installedVersion(dir, pkg string) string {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"))
	if err != nil {
		return ""
	}
	var p struct{ Version string }
	_ = json.Unmarshal(b, &p)
	return p.Version
}

// binPath is where the client's executable is once installed.
func (h *harness) binPath(c Client) string {
	modules := filepath.Join(h.installDir(c), "node_modules")
	if strings.Contains(c.Bin, "/") {
		return filepath.Join(modules, filepath.FromSlash(c.Package), filepath.FromSlash(c.Bin))
	}
	return filepath.Join(modules, ".bin", c.Bin)
}

// install puts the client's pinned package into the cache unless it is there
// already, and returns the directory of its executable.
func (h *harness) install(c Client) (string, error) {
	dir := h.installDir(c)
	bin := h.binPath(c)
	if installedVersion(dir, c.Package) == c.Version && fileExists(bin) {
		return filepath.Dir(bin), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	fmt.Fprintf(h.log, "installing %s@%s into %s\n", c.Package, c.Version, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error",
		c.Package+"@"+c.Version)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm install %s@%s: %v: %s", c.Package, c.Version, err, lastLines(string(out), 3))
	}
	if !fileExists(bin) {
		return "", fmt.Errorf("npm install %s@%s installed no %s", c.Package, c.Version, c.Bin)
	}
	return filepath.Dir(bin), nil
}
