package console

import (
	"regexp"
	"strings"
)

// mdBlock is one block of a Markdown document as the docs page shows it: a heading (Level 1
// to 4, with an anchor ID), a code block (Pre) or a paragraph, list or table kept as written.
// The template escapes Text; nothing of the file becomes markup but the structure.
type mdBlock struct {
	Level int
	ID    string
	Pre   bool
	Text  string
}

var slugDrop = regexp.MustCompile(`[^a-z0-9 -]`)

// slug is a heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to
// hyphens, so links into docs/api.md work the same on the console and on GitHub.
func slug(h string) string {
	return strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
}

// markdownBlocks splits Markdown into headings, fenced code blocks and the paragraphs between
// them. It is no Markdown renderer, only enough structure for a readable page with anchors
// and without a front-end dependency.
func markdownBlocks(src string) []mdBlock {
	var (
		out   []mdBlock
		para  []string
		fence []string
		in    bool
	)
	flush := func() {
		if t := strings.TrimSpace(strings.Join(para, "\n")); t != "" {
			out = append(out, mdBlock{Text: t})
		}
		para = para[:0]
	}
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if in {
				out = append(out, mdBlock{Pre: true, Text: strings.Join(fence, "\n")})
				fence, in = fence[:0], false
			} else {
				flush()
				in = true
			}
			continue
		}
		if in {
			fence = append(fence, line)
			continue
		}
		if level := len(line) - len(strings.TrimLeft(line, "#")); level >= 1 && level <= 4 && strings.HasPrefix(line[level:], " ") {
			flush()
			h := strings.TrimSpace(line[level:])
			out = append(out, mdBlock{Level: level, ID: slug(h), Text: h})
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		para = append(para, line)
	}
	flush()
	if in {
		out = append(out, mdBlock{Pre: true, Text: strings.Join(fence, "\n")})
	}
	return out
}
