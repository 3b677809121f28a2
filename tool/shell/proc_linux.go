package shell

import (
	"bytes"
	"os"
	"strconv"
)

// groupHasLiving reports whether a process of group pgid runs: it reads
// /proc/*/stat and skips zombies. It answers true when /proc cannot be
// read (then the caller waits and kills as if the group lived).
func groupHasLiving(pgid int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return true
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return true
	}
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // it ended meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 {
			continue
		}
		if pg, err := strconv.Atoi(string(f[2])); err != nil || pg != pgid {
			continue
		}
		if s := f[0]; len(s) == 1 && (s[0] == 'Z' || s[0] == 'X' || s[0] == 'x') {
			continue
		}
		return true
	}
	return false
}
