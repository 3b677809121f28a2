// The machine the benchmarks ran on.

package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

type machine struct {
	goVersion  string
	nproc      int
	gomaxprocs int
	cpu        string
	osArch     string
	loadBefore string
	loadAfter  string
	date       string
	partial    string // a run of some suites only (-only): which, and where the other rows come from
}

func machineInfo(goCmd string) machine {
	m := machine{nproc: runtime.NumCPU(), gomaxprocs: runtime.GOMAXPROCS(0), osArch: runtime.GOOS + "/" + runtime.GOARCH}
	if out, err := exec.Command(goCmd, "version").Output(); err == nil {
		m.goVersion = strings.TrimSpace(string(out))
	} else {
		m.goVersion = runtime.Version()
	}
	if out, err := exec.Command("nproc").Output(); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil {
			m.nproc = n
		}
	}
	m.cpu = cpuModel()
	return m
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func (m machine) String() string {
	return fmt.Sprintf("go=%s\nnproc=%d\ngomaxprocs=%d\ncpu=%s\nos=%s\nload_before=%s\nload_after=%s\ndate=%s\npartial=%s\n",
		m.goVersion, m.nproc, m.gomaxprocs, m.cpu, m.osArch, m.loadBefore, m.loadAfter, m.date, m.partial)
}

func parseMachine(s string) machine {
	var m machine
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch k {
		case "go":
			m.goVersion = v
		case "nproc":
			m.nproc, _ = strconv.Atoi(v)
		case "gomaxprocs":
			m.gomaxprocs, _ = strconv.Atoi(v)
		case "cpu":
			m.cpu = v
		case "os":
			m.osArch = v
		case "load_before":
			m.loadBefore = v
		case "load_after":
			m.loadAfter = v
		case "date":
			m.date = v
		case "partial":
			m.partial = v
		}
	}
	return m
}
