package proctree

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// proc is what /proc/PID/stat says of a process.
type proc struct {
	ppid   int
	zombie bool   // dead, waiting to be reaped (states Z, X)
	start  uint64 // start time in clock ticks after boot: with the pid, the process's identity
}

// readStat reads /proc/PID/stat; false when the process is gone.
func readStat(pid int) (proc, bool) {
	var buf [512]byte
	return readStatInto(pid, buf[:])
}

// readStatInto reads /proc/PID/stat with buf (a stat line is a few
// hundred bytes).
func readStatInto(pid int, buf []byte) (proc, bool) {
	b, err := readProcFile("/proc/"+strconv.Itoa(pid)+"/stat", buf)
	if err != nil {
		return proc{}, false
	}
	return parseStat(b)
}

// readProcFile reads a /proc file into buf, growing it when needed. It
// uses the system calls themselves: an os.File costs more than the read
// (the walk reads every process's stat).
func readProcFile(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf)+512)...)
		}
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
	}
}

// parseStat parses "pid (comm) state ppid pgrp session ... starttime ...":
// comm may hold spaces and ')', so the fields are counted from the last
// ')'.
func parseStat(b []byte) (proc, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return proc{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return proc{}, false
	}
	s := f[0]
	return proc{ppid: ppid, zombie: len(s) == 1 && (s[0] == 'Z' || s[0] == 'X' || s[0] == 'x'), start: start}, true
}

// readProcs reads the stat of every process; false when /proc cannot be
// listed.
func readProcs() (map[int]proc, bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, false
	}
	procs := make(map[int]proc, len(names))
	buf := make([]byte, 512)
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := readStatInto(pid, buf); ok {
			procs[pid] = p
		}
	}
	return procs, true
}

// childrenOfSelf lists this process's children from
// /proc/self/task/*/children (an adopted orphan is the child of one of its
// threads), or from every process's stat when the kernel has no such file.
func childrenOfSelf() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err == nil && len(tasks) > 0 {
		var kids []int
		ok := true
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
			if os.IsNotExist(err) && len(kids) == 0 {
				ok = false // no CONFIG_PROC_CHILDREN (or the thread ended: scanned below)
				break
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					kids = append(kids, pid)
				}
			}
		}
		if ok {
			return kids
		}
	}
	procs, _ := readProcs()
	self := os.Getpid()
	var kids []int
	for pid, p := range procs {
		if p.ppid == self {
			kids = append(kids, pid)
		}
	}
	return kids
}

// markOf returns the "markEnv=value" entry of process pid's initial
// environment; "" when it has none or it cannot be read (another user's
// process, a zombie).
func markOf(pid int) string {
	b, err := readProcFile("/proc/"+strconv.Itoa(pid)+"/environ", make([]byte, 4096))
	if err != nil {
		return ""
	}
	for len(b) > 0 {
		var entry []byte
		entry, b, _ = bytes.Cut(b, []byte{0})
		if v, ok := bytes.CutPrefix(entry, []byte(markEnv+"=")); ok {
			return markEnv + "=" + string(v)
		}
	}
	return ""
}

// descendants returns the processes of procs descended from the roots,
// the roots included (those procs has).
func descendants(procs map[int]proc, roots []int) map[int]proc {
	kids := make(map[int][]int, len(procs))
	for pid, p := range procs {
		kids[p.ppid] = append(kids[p.ppid], pid)
	}
	out := map[int]proc{}
	queue := append([]int(nil), roots...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		p, ok := procs[pid]
		if _, seen := out[pid]; seen || !ok {
			continue
		}
		out[pid] = p
		queue = append(queue, kids[pid]...)
	}
	return out
}
