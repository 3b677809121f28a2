package files

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

const readDescription = "Read a text file and return its lines numbered like `cat -n` (the line number, a tab, " +
	"the line). By default up to 2000 lines are returned from the start of the file; for a long file pass offset " +
	"(the 1-based line to start at) and limit (how many lines) to page through it - the result says how many " +
	"lines remain. Lines longer than 2000 characters are cut. Binary files are recognised and not shown. " +
	"file_path may be absolute or relative to the workspace root and must lie inside the workspace. Read a " +
	"file before changing it with Edit or Write. Use LS, not Read, for a directory. Reading several files " +
	"in parallel is fine."

type readArgs struct {
	FilePath string `json:"file_path" jsonschema:"description=The file to read: absolute or relative to the workspace root"`
	Offset   int    `json:"offset,omitempty" jsonschema:"description=The 1-based line number to start reading at (default 1)"`
	Limit    int    `json:"limit,omitempty" jsonschema:"description=The number of lines to read (default 2000)"`
}

// maxCountBytes bounds the bytes read past the shown range to count the
// lines that remain (and hash the file).
const maxCountBytes = 256 << 20

func (t *Toolset) read(ctx context.Context, call tool.Call, a readArgs) tool.Result {
	root, errRes := t.open(ctx)
	if errRes != nil {
		return *errRes
	}
	defer root.Close()
	abs, errRes := confine(root, a.FilePath, "file_path")
	if errRes != nil {
		return *errRes
	}
	ws := root.Workspace()
	if a.Offset < 0 || a.Limit < 0 {
		return tool.Errorf("offset and limit must not be negative.")
	}
	offset, limit := max(a.Offset, 1), a.Limit
	if limit == 0 {
		limit = defaultReadLines
	}
	info, err := root.Stat(abs)
	if err != nil && !os.IsNotExist(err) {
		return tool.Errorf("Cannot read %s: %v", abs, err)
	}
	if info != nil && info.IsDir() {
		return tool.Errorf("%s is a directory, not a file. Use LS to list its contents.", abs)
	}
	if info != nil && !info.Mode().IsRegular() { // a FIFO would block, a device never end
		return tool.Errorf("%s is not a regular file (%v); it cannot be read.", abs, info.Mode().Type())
	}
	loc := []tool.Location{{Path: abs, Line: a.Offset}}

	var out rendered
	if fsys := workspace.FSFrom(ctx); fsys != nil {
		text, err := fsys.ReadTextFile(ctx, abs, 0, 0)
		if err != nil {
			if info == nil {
				return notFound(abs, a.FilePath, ws)
			}
			return tool.Errorf("Cannot read %s through the editor: %v", abs, err)
		}
		t.tracker.set(call.SessionID, abs, t.stateOf(info, &text))
		if bin, kind := sniff([]byte(text[:min(len(text), sniffBytes)]), len(text) > sniffBytes); bin {
			return binaryResult(abs, kind, int64(len(text)), loc)
		}
		out, err = render(strings.NewReader(text), offset, limit, t.seed)
		if err != nil {
			return tool.Errorf("Cannot read %s: %v", abs, err)
		}
	} else {
		if info == nil {
			return notFound(abs, a.FilePath, ws)
		}
		f, info, err := openRegular(root, abs)
		if err != nil {
			return tool.Errorf("Cannot read %s: %v", abs, err)
		}
		defer f.Close()
		head := make([]byte, sniffBytes)
		n, err := io.ReadFull(f, head)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return tool.Errorf("Cannot read %s: %v", abs, err)
		}
		if bin, kind := sniff(head[:n], info.Size() > int64(n)); bin {
			t.tracker.set(call.SessionID, abs, t.stateOf(info, nil))
			return binaryResult(abs, kind, info.Size(), loc)
		}
		out, err = render(io.MultiReader(bytes.NewReader(head[:n]), f), offset, limit, t.seed)
		if err != nil {
			return tool.Errorf("Cannot read %s: %v", abs, err)
		}
		st := t.stateOf(info, nil)
		st.hash, st.hashed = out.hash, out.hashed
		t.tracker.set(call.SessionID, abs, st)
	}

	meta := map[string]any{"lines": out.shown, "truncated": out.truncated()}
	if out.totalKnown {
		meta["total_lines"] = out.total
	}
	res := tool.Result{Locations: loc, Metadata: meta}
	switch {
	case out.total == 0 && out.totalKnown:
		res.Content = fmt.Sprintf("The file %s exists but is empty.", abs)
	case out.shown == 0:
		res.Content = fmt.Sprintf("The file %s has %s; offset %d is past its end.", abs, plural(out.total, "line", "lines"), offset)
	default:
		res.Content = out.text
	}
	return res
}

func notFound(abs, given string, ws *workspace.Workspace) tool.Result {
	if filepath.IsAbs(given) {
		return tool.Errorf("File does not exist: %s", abs)
	}
	return tool.Errorf("File does not exist: %s (relative paths are taken from the workspace root %s)", abs, ws.Root())
}

func binaryResult(abs, kind string, size int64, loc []tool.Location) tool.Result {
	what := fmt.Sprintf("%d bytes", size)
	if kind != "" {
		what = kind + ", " + what
	}
	return tool.Result{
		Content:   fmt.Sprintf("%s is a binary file (%s); its content is not shown.", abs, what),
		Locations: loc,
		Metadata:  map[string]any{"binary": true, "bytes": size},
	}
}

// rendered is a range of a file formatted for the model.
type rendered struct {
	text       string
	shown      int  // lines shown
	total      int  // lines in the file, when totalKnown
	totalKnown bool // false when the file was too long to count
	cutLines   int  // lines shortened to maxLineChars
	more       bool // lines follow the range shown
	capped     bool // the output reached maxReadOutput
	hash       uint64
	hashed     bool // hash covers the whole file
}

func (r rendered) truncated() bool { return r.more || r.capped || r.cutLines > 0 }

// render formats limit lines from line offset of r like `cat -n`, and
// counts the lines after them.
func render(r io.Reader, offset, limit int, seed maphash.Seed) (rendered, error) {
	var h maphash.Hash
	h.SetSeed(seed)
	br := bufio.NewReaderSize(io.TeeReader(r, &h), 64<<10)
	var out rendered
	var sb strings.Builder
	lineNo := 0
	// Skip to offset.
	for lineNo < offset-1 {
		_, _, ok, err := readLine(br, nil, 0)
		if err != nil {
			return out, err
		}
		if !ok {
			out.total, out.totalKnown = lineNo, true
			out.hash, out.hashed = h.Sum64(), true
			return out, nil
		}
		lineNo++
	}
	buf := make([]byte, 0, 4*maxLineChars+4)
	next := 0 // the first line not shown, when one was read but not shown
	for out.shown < limit {
		line, n, ok, err := readLine(br, buf, 4*maxLineChars+4)
		if err != nil {
			return out, err
		}
		if !ok {
			break
		}
		lineNo++
		s, cut := cutRunes(line, maxLineChars)
		if cut || n > len(line) {
			s += fmt.Sprintf("... [line truncated to %d characters; the full line is %d bytes]", maxLineChars, n)
			out.cutLines++
		}
		formatted := fmt.Sprintf("%6d\t%s\n", lineNo, s)
		if sb.Len()+len(formatted) > maxReadOutput && out.shown > 0 {
			out.capped, next = true, lineNo
			break
		}
		sb.WriteString(formatted)
		out.shown++
	}
	rest, known, err := countLines(br, maxCountBytes)
	if err != nil {
		return out, err
	}
	if next > 0 {
		rest++
	}
	nextOffset := lineNo + 1
	if next > 0 {
		nextOffset = next
	}
	if known {
		out.total, out.totalKnown = nextOffset-1+rest, true
		out.hash, out.hashed = h.Sum64(), true
	}
	out.more = rest > 0 || !known
	if out.capped {
		fmt.Fprintf(&sb, "... [output cut at %d characters]\n", maxReadOutput)
	}
	switch {
	case !out.more:
	case known:
		fmt.Fprintf(&sb, "... %s; use offset/limit to read them (next offset: %d)\n", plural(rest, "more line", "more lines"), nextOffset)
	default:
		fmt.Fprintf(&sb, "... more lines follow; use offset/limit to read them (next offset: %d)\n", nextOffset)
	}
	out.text = sb.String()
	return out, nil
}

// readLine reads one line from br into buf, keeping at most keep bytes of
// it, without its "\n" or "\r\n". n is the length of the whole line (without
// "\n"); ok is false at the end of the input.
func readLine(br *bufio.Reader, buf []byte, keep int) (line []byte, n int, ok bool, err error) {
	line = buf[:0]
	for {
		frag, err := br.ReadSlice('\n')
		n += len(frag)
		if room := keep - len(line); room > 0 {
			line = append(line, frag[:min(room, len(frag))]...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if n == 0 {
				return line, 0, false, nil
			}
		case err != nil:
			return line, n, false, err
		default:
			n-- // the "\n"
		}
		if len(line) > n {
			line = line[:n]
		}
		if len(line) == n && n > 0 && line[n-1] == '\r' {
			line, n = line[:n-1], n-1
		}
		return line, n, true, nil
	}
}

// countLines counts the lines left in br, reading at most budget bytes;
// known is false when it stopped there.
func countLines(br *bufio.Reader, budget int64) (lines int, known bool, err error) {
	buf := make([]byte, 64<<10)
	var read int64
	last := byte('\n')
	for {
		n, err := br.Read(buf)
		if n > 0 {
			lines += bytes.Count(buf[:n], []byte{'\n'})
			last = buf[n-1]
			read += int64(n)
		}
		if errors.Is(err, io.EOF) {
			if last != '\n' {
				lines++
			}
			return lines, true, nil
		}
		if err != nil {
			return lines, false, err
		}
		if read > budget {
			return lines, false, nil
		}
	}
}

// cutRunes returns b as a string of at most n characters (an invalid byte
// counts as one), and whether it was cut.
func cutRunes(b []byte, n int) (string, bool) {
	if len(b) <= n {
		return string(b), false
	}
	i := 0
	for c := 0; c < n && i < len(b); c++ {
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return string(b[:i]), i < len(b)
}

// sniff tells a binary sample from text: NUL bytes, or mostly invalid
// UTF-8 and control characters. more says the sample is a prefix. kind
// names well-known binary formats.
func sniff(b []byte, more bool) (binary bool, kind string) {
	kind = magic(b)
	if bytes.IndexByte(b, 0) >= 0 {
		return true, kind
	}
	bad := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			if more && len(b)-i < utf8.UTFMax && !utf8.FullRune(b[i:]) {
				break // a character cut by the end of the sample
			}
			bad++
		} else if r < 0x20 && !strings.ContainsRune("\t\n\r\f\v\b\x1b", r) || r == 0x7f {
			bad++
		}
		i += size
	}
	return bad*10 > len(b) || (kind != "" && bad > 0), kind
}

// magic names the format of well-known binary files.
func magic(b []byte) string {
	has := func(prefix string) bool { return bytes.HasPrefix(b, []byte(prefix)) }
	switch {
	case has("\x89PNG\r\n\x1a\n"):
		return "PNG image"
	case has("\xff\xd8\xff"):
		return "JPEG image"
	case has("GIF87a"), has("GIF89a"):
		return "GIF image"
	case has("RIFF") && len(b) >= 12 && string(b[8:12]) == "WEBP":
		return "WebP image"
	case has("BM") && len(b) >= 14 && bytes.IndexByte(b[:14], 0) >= 0:
		return "BMP image"
	case has("\x00\x00\x01\x00"):
		return "ICO image"
	case has("II*\x00"), has("MM\x00*"):
		return "TIFF image"
	case has("%PDF-"):
		return "PDF document"
	case has("PK\x03\x04"):
		return "ZIP archive"
	case has("\x1f\x8b"):
		return "gzip archive"
	case has("\x7fELF"):
		return "ELF executable"
	case has("\x00asm"):
		return "WebAssembly module"
	}
	return ""
}
