package cli

import (
	"fmt"
	"io"
	"strings"
)

// maxStdinPrompt bounds the prompt `run -` reads from stdin: 4 MiB is
// about a million tokens, the largest context windows offered, so a
// larger input is a mistake (a binary, a log piped whole) that would only
// fail later at the provider, after the pool has started.
const maxStdinPrompt = 4 << 20

// promptArg is the prompt of `run ARGS...`: the words joined by spaces,
// or, when the only word is "-", stdin read to its end (at most
// maxStdinPrompt bytes; empty or blank is an error).
func promptArg(args []string, stdin io.Reader) (string, error) {
	if len(args) != 1 || args[0] != "-" {
		return strings.Join(args, " "), nil
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxStdinPrompt+1))
	if err != nil {
		return "", fmt.Errorf("run -: reading the prompt from stdin: %w", err)
	}
	if len(b) > maxStdinPrompt {
		return "", fmt.Errorf("run -: the prompt on stdin is larger than %d MiB", maxStdinPrompt>>20)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", fmt.Errorf("run -: stdin is empty; pipe the prompt in (echo hi | agentpool run -) or give it as arguments")
	}
	return string(b), nil
}
