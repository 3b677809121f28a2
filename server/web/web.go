package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// AssetPrefix is the path under which the page's scripts, styles and
// images are served.
const AssetPrefix = "/ui/"

// CSP is the Content-Security-Policy of every answer: the server's own
// files and API only; no inline script or style element, no plugins, no
// framing, no form posts.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one embedded file, ready to serve.
type file struct {
	body  []byte
	ctype string
	etag  string
}

// UI serves the embedded page and its assets. Its zero value is not
// usable; call New.
type UI struct {
	files map[string]file // request path -> file
	mod   time.Time
}

// New loads the embedded files.
func New() *UI {
	u := &UI{files: map[string]file{}, mod: time.Now()}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		f := file{body: b, ctype: contentType(p), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		name := strings.TrimPrefix(p, "static/")
		if name == "index.html" {
			u.files["/"] = f
			return nil
		}
		u.files[AssetPrefix+name] = f
		return nil
	})
	if err != nil {
		// The files are compiled in: a failure here is a build defect.
		panic("web: embedded files: " + err.Error())
	}
	return u
}

// contentType is the type of a file by its extension, with the charset
// of text files (the mime package's table varies with the system).
func contentType(p string) string {
	switch path.Ext(p) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	}
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// Serves reports whether r is a GET or HEAD of the page or of one of its
// assets.
func (u *UI) Serves(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	_, ok := u.files[r.URL.Path]
	return ok
}

// ServeHTTP answers the page or an asset; anything else is 404 (the
// OpenCode server never sends it here: see Serves).
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	f, ok := u.files[r.URL.Path]
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.NotFound(w, r)
		return
	}
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	// Revalidated on every load (a 304 costs little), so that a new
	// binary's page is never mixed with an old one's scripts.
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "", u.mod, bytes.NewReader(f.body))
}
