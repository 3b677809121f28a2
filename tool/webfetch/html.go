package webfetch

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlToText turns an HTML document into readable text: headings as
// "# ..." lines, paragraphs and blocks separated by blank lines, list
// items as "- " or "1. " lines, table cells joined by " | ", links as
// "text (url)" with url resolved against base, whitespace collapsed.
// Scripts, styles, the head, navigation, forms' controls and hidden
// elements are dropped. It returns the document's title too.
func htmlToText(body []byte, base *url.URL) (title, text string) {
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		// html.Parse fails only on reader errors.
		return "", string(body)
	}
	c := &converter{base: base}
	title = collapse(findTitle(doc))
	c.walk(doc)
	return title, strings.TrimSpace(c.b.String())
}

// findTitle returns the text of the first <title>.
func findTitle(n *html.Node) string {
	if n.Type == html.ElementNode && n.DataAtom == atom.Title {
		var b strings.Builder
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			if ch.Type == html.TextNode {
				b.WriteString(ch.Data)
			}
		}
		return b.String()
	}
	if n.Type == html.ElementNode && n.DataAtom == atom.Svg {
		return "" // an SVG <title> is no page title
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if t := findTitle(ch); t != "" {
			return t
		}
	}
	return ""
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// converter writes text with pending separators: a space or up to two
// newlines are written only before the next text, so blocks never leave
// runs of blank lines or trailing spaces.
type converter struct {
	base    *url.URL
	b       strings.Builder
	nl      int  // newlines due before the next text (0-2)
	space   bool // a space is due before the next text
	pre     int  // depth of <pre>
	inLink  int
	lists   []list
	cells   []int // cells written in each open table row
	started bool
}

type list struct {
	ordered bool
	n       int
}

// block asks for n newlines (1: a line break, 2: a blank line) before the
// next text.
func (c *converter) block(n int) {
	c.nl = max(c.nl, n)
	c.space = false
}

// emit writes s after the pending separator.
func (c *converter) emit(s string) {
	if s == "" {
		return
	}
	if c.started {
		if c.nl > 0 {
			c.b.WriteString("\n\n"[:c.nl])
		} else if c.space {
			c.b.WriteByte(' ')
		}
	}
	c.nl, c.space, c.started = 0, false, true
	c.b.WriteString(s)
}

// text writes a text node, its whitespace collapsed (kept inside <pre>).
func (c *converter) text(s string) {
	if c.pre > 0 {
		c.emit(s)
		return
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		if s != "" {
			c.space = true
		}
		return
	}
	if first := s[0]; first == ' ' || first == '\t' || first == '\n' || first == '\r' || first == '\f' {
		c.space = true
	}
	for i, f := range fields {
		if i > 0 {
			c.space = true
		}
		c.emit(f)
	}
	if last := s[len(s)-1]; last == ' ' || last == '\t' || last == '\n' || last == '\r' || last == '\f' {
		c.space = true
	}
}

// skipped are elements whose content is not text for a reader.
var skipped = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true,
	atom.Template: true, atom.Svg: true, atom.Math: true, atom.Nav: true,
	atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Canvas: true,
	atom.Select: true, atom.Button: true, atom.Input: true, atom.Textarea: true,
	atom.Audio: true, atom.Video: true, atom.Map: true, atom.Dialog: true,
}

// paragraphs are separated from what surrounds them by a blank line,
// lines by a line break.
var (
	paragraphs = map[atom.Atom]bool{
		atom.P: true, atom.Blockquote: true, atom.Pre: true, atom.Table: true,
		atom.Dl: true, atom.Figure: true, atom.Section: true, atom.Article: true,
		atom.Header: true, atom.Footer: true, atom.Main: true, atom.Aside: true,
		atom.Form: true, atom.Fieldset: true, atom.Address: true, atom.Details: true,
		atom.Hr: true,
	}
	lines = map[atom.Atom]bool{
		atom.Div: true, atom.Tr: true, atom.Dt: true, atom.Dd: true,
		atom.Summary: true, atom.Figcaption: true, atom.Caption: true,
		atom.Legend: true, atom.Label: true, atom.Li: true,
	}
)

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hidden(n *html.Node) bool {
	if _, ok := attr(n, "hidden"); ok {
		return true
	}
	if v, _ := attr(n, "aria-hidden"); v == "true" {
		return true
	}
	return false
}

func (c *converter) children(n *html.Node) {
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		c.walk(ch)
	}
}

func (c *converter) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		c.text(n.Data)
		return
	case html.DocumentNode:
		c.children(n)
		return
	case html.ElementNode:
	default:
		return // comments, doctypes
	}
	a := n.DataAtom
	if skipped[a] || hidden(n) {
		return
	}
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		c.block(2)
		c.emit(strings.Repeat("#", int(n.Data[1]-'0')))
		c.space = true
		c.children(n)
		c.block(2)
	case atom.Br:
		c.block(1)
	case atom.Ul, atom.Ol:
		if len(c.lists) == 0 {
			c.block(2)
		} else {
			c.block(1)
		}
		c.lists = append(c.lists, list{ordered: a == atom.Ol})
		c.children(n)
		c.lists = c.lists[:len(c.lists)-1]
		if len(c.lists) == 0 {
			c.block(2)
		} else {
			c.block(1)
		}
	case atom.Li:
		c.block(1)
		prefix := "-"
		if k := len(c.lists); k > 0 {
			l := &c.lists[k-1]
			l.n++
			if l.ordered {
				prefix = fmt.Sprintf("%d.", l.n)
			}
			prefix = strings.Repeat("  ", k-1) + prefix
		}
		c.emit(prefix)
		c.space = true
		c.children(n)
		c.block(1)
	case atom.Pre:
		c.block(2)
		c.pre++
		c.children(n)
		c.pre--
		c.block(2)
	case atom.Tr:
		c.block(1)
		c.cells = append(c.cells, 0)
		c.children(n)
		c.cells = c.cells[:len(c.cells)-1]
		c.block(1)
	case atom.Td, atom.Th:
		if k := len(c.cells); k > 0 {
			if c.cells[k-1] > 0 {
				c.space = false
				c.emit(" |")
				c.space = true
			}
			c.cells[k-1]++
		}
		c.children(n)
		c.space = true
	case atom.A:
		c.link(n)
	case atom.Img:
		if alt, _ := attr(n, "alt"); c.inLink > 0 && strings.TrimSpace(alt) != "" {
			c.text(alt)
		}
	default:
		switch {
		case paragraphs[a]:
			c.block(2)
			c.children(n)
			c.block(2)
		case lines[a]:
			c.block(1)
			c.children(n)
			c.block(1)
		default:
			c.children(n)
		}
	}
}

// link writes a link's text followed by " (url)".
func (c *converter) link(n *html.Node) {
	href, _ := attr(n, "href")
	target := c.resolve(href)
	start := c.b.Len()
	c.inLink++
	c.children(n)
	c.inLink--
	if target == "" || c.pre > 0 {
		return
	}
	label := strings.TrimSpace(c.b.String()[start:])
	if label == "" || label == target {
		return
	}
	space := c.space
	c.space = false
	c.emit(" (" + target + ")")
	c.space = space
}

// resolve returns href as an absolute URL, or "" for a link not worth
// showing (none, same-page fragment, javascript:).
func (c *converter) resolve(href string) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if c.base != nil {
		u = c.base.ResolveReference(u)
	}
	switch strings.ToLower(u.Scheme) {
	case "javascript", "data", "vbscript":
		return ""
	}
	return u.String()
}
