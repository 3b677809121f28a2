package ctlsock

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDirIsPrivate(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", base)
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v %v, want a 0700 directory", dir, fi.Mode(), err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(); err == nil || !strings.Contains(err.Error(), "open to others") {
		t.Errorf("a 0755 directory: %v, want refused", err)
	}
	other := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", other)
	if err := os.Symlink(dir, filepath.Join(other, "agentpool")); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a symlink: %v, want refused", err)
	}
}

func TestAskAndClose(t *testing.T) {
	dir := t.TempDir()
	got := make(chan Request, 1)
	s, err := Listen(dir, func(_ context.Context, r Request) Reply {
		got <- r
		if r.Session == "ses_gone" {
			return Reply{Error: "not running here"}
		}
		return Reply{Ended: true}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.Path()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v, want 0600", fi.Mode(), err)
	}
	ctx := context.Background()
	rep, err := Ask(ctx, s.Path(), Request{Op: OpCancel, Session: "ses_a", By: "cli"})
	if err != nil || !rep.Ended || rep.Error != "" {
		t.Fatalf("Ask = %+v, %v", rep, err)
	}
	if r := <-got; r != (Request{Op: OpCancel, Session: "ses_a", By: "cli"}) {
		t.Errorf("the handler got %+v", r)
	}
	if rep, err := Ask(ctx, s.Path(), Request{Op: OpCancel, Session: "ses_gone"}); err != nil || rep.Error != "not running here" {
		t.Errorf("Ask = %+v, %v", rep, err)
	}
	<-got
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is left after Close: %v", err)
	}
	if _, err := Ask(ctx, s.Path(), Request{Op: OpCancel, Session: "ses_a"}); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Ask after Close: %v, want ErrNoProcess", err)
	}
}

func TestOversizedRequestIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Listen(dir, func(context.Context, Request) Reply { t.Error("handled"); return Reply{} }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(strings.Repeat("x", maxRequest+10) + "\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, _ := c.Read(buf)
	if !strings.Contains(string(buf[:n]), "request longer than 4096 bytes") {
		t.Errorf("answer %q", buf[:n])
	}
}

// Close cancels a handler's context and waits for it.
func TestCloseCancelsHandlers(t *testing.T) {
	dir := t.TempDir()
	in := make(chan struct{})
	s, err := Listen(dir, func(ctx context.Context, _ Request) Reply {
		close(in)
		<-ctx.Done()
		return Reply{Error: "closing"}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan Reply, 1)
	go func() {
		rep, _ := Ask(context.Background(), s.Path(), Request{Op: OpCancel, Session: "x"})
		answered <- rep
	}()
	<-in
	s.Close()
	if rep := <-answered; rep.Error != "closing" {
		t.Errorf("answer %+v", rep)
	}
}
