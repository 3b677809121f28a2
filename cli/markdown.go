package cli

import (
	"regexp"
	"strings"
	"sync"
)

// renderMarkdown shows a model's answer, markdown, on a terminal: headings
// bold, emphasis and inline code styled, list bullets as •, quotes and
// code blocks set off, the markers themselves dropped. Anything else is
// left as written. text must have its controls made visible already
// (termtext.Text): the SGR sequences added here are then the only ones.
//
// Not glamour: linking it (with chroma, goldmark and bluemonday) made
// the package inits of every agentpool-light start about four times as
// long (docs/cli.md, "Answers on a terminal"), a cost every command pays
// for what only run's last print uses.
func renderMarkdown(text string) string {
	var out []string
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = "" // the closing fence line is not shown
		case fence != "":
			out = append(out, sgr("  "+line, sgrCode))
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
		default:
			out = append(out, markdownLine(line))
		}
	}
	return strings.Join(out, "\n")
}

// The SGR sequences used, each with its reset.
const (
	sgrBold      = "1"
	sgrItalic    = "3"
	sgrUnderline = "4"
	sgrCode      = "36" // cyan
	sgrFaint     = "2"
)

func sgr(s, code string) string { return "\x1b[" + code + "m" + s + "\x1b[0m" }

// markdownLine renders one line outside a code block.
func markdownLine(line string) string {
	re := markdownRes()
	if m := re.heading.FindStringSubmatch(line); m != nil {
		code := sgrBold
		if len(m[1]) <= 2 {
			code = sgrBold + ";" + sgrUnderline
		}
		return sgr(stripInline(m[2]), code)
	}
	if re.rule.MatchString(line) {
		return sgr(strings.Repeat("─", 40), sgrFaint)
	}
	if m := re.bullet.FindStringSubmatch(line); m != nil {
		return m[1] + "• " + inline(m[2])
	}
	if rest, ok := strings.CutPrefix(strings.TrimLeft(line, " "), ">"); ok {
		return sgr("│", sgrFaint) + " " + inline(strings.TrimPrefix(rest, " "))
	}
	return inline(line)
}

// markdownRes are the patterns, compiled on first use: at package init
// every command would pay for them.
var markdownRes = sync.OnceValue(func() *mdPatterns {
	return &mdPatterns{
		heading: regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`),
		bullet:  regexp.MustCompile(`^(\s*)[-*+]\s+(.*)$`),
		rule:    regexp.MustCompile(`^\s*([-*_])(\s*([-*_])){2,}\s*$`),
		code:    regexp.MustCompile("`([^`]+)`"),
		bold:    regexp.MustCompile(`\*\*([^*\s](?:[^*]*[^*\s])?)\*\*|__([^_\s](?:[^_]*[^_\s])?)__`),
		italic:  regexp.MustCompile(`(^|[^\w*])\*([^*\s](?:[^*]*[^*\s])?)\*|(^|[^\w_])_([^_\s](?:[^_]*[^_\s])?)_`),
		link:    regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`),
	}
})

type mdPatterns struct{ heading, bullet, rule, code, bold, italic, link *regexp.Regexp }

// inline styles the spans of one line; inline code is kept as written.
func inline(s string) string {
	codeRe := markdownRes().code
	parts := codeRe.Split(s, -1)
	codes := codeRe.FindAllStringSubmatch(s, -1)
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(spans(p))
		if i < len(codes) {
			b.WriteString(sgr(codes[i][1], sgrCode))
		}
	}
	return b.String()
}

// spans styles the bold, italic and link spans of text outside code.
func spans(s string) string {
	re := markdownRes()
	linkRe, boldRe, italicRe := re.link, re.bold, re.italic
	s = linkRe.ReplaceAllStringFunc(s, func(m string) string {
		g := linkRe.FindStringSubmatch(m)
		if g[1] == g[2] {
			return sgr(g[1], sgrUnderline)
		}
		return sgr(g[1], sgrUnderline) + " (" + g[2] + ")"
	})
	s = boldRe.ReplaceAllStringFunc(s, func(m string) string {
		g := boldRe.FindStringSubmatch(m)
		return sgr(g[1]+g[2], sgrBold)
	})
	return italicRe.ReplaceAllStringFunc(s, func(m string) string {
		g := italicRe.FindStringSubmatch(m)
		return g[1] + g[3] + sgr(g[2]+g[4], sgrItalic)
	})
}

// stripInline is a heading's text: styled as a whole, its own markers
// dropped.
func stripInline(s string) string {
	re := markdownRes()
	s = re.code.ReplaceAllString(s, "$1")
	s = re.bold.ReplaceAllString(s, "$1$2")
	return s
}
