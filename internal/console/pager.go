package console

import (
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
)

// pager is a keyset-paged table's position as a person reads it ("Page 2 of 14",
// "51–100 of 693") with links to the previous and the next page. Keyset pages have no
// offsets, so the links carry the trail of cursors that led here (?trail=, comma-separated,
// the first page's "" first): Previous goes back along it.
type pager struct {
	Page       int
	Pages      int   // 0 when the total is not known
	From, To   int64 // the rows shown, counting from 1
	Total      int64 // -1 when not known
	Prev, Next string
}

// keysetPager is the pager of a page read from cursor (the query parameter key) that showed
// shown rows of size a page, next the cursor of the following page ("" at the end), total the
// rows matching (-1 when not counted); base is the page's URL with its filters.
func keysetPager(c *gin.Context, base url.Values, path, key, next string, shown, size int, total int64) pager {
	cursor := c.Query(key)
	var trail []string
	if cursor != "" {
		trail = strings.Split(c.Query("trail"), ",")
	}
	p := pager{Page: len(trail) + 1, Total: total}
	p.From = int64(len(trail)*size) + 1
	p.To = p.From + int64(shown) - 1
	if shown == 0 {
		p.From = 0
	}
	if total >= 0 {
		p.Pages = int((total + int64(size) - 1) / int64(size))
	}
	link := func(cur string, tr []string) string {
		q := url.Values{}
		for k, v := range base {
			q[k] = v
		}
		if cur != "" {
			q.Set(key, cur)
			q.Set("trail", strings.Join(tr, ","))
		}
		return path + "?" + q.Encode()
	}
	if len(trail) > 0 {
		p.Prev = link(trail[len(trail)-1], trail[:len(trail)-1])
	}
	if next != "" {
		p.Next = link(next, append(append([]string{}, trail...), cursor))
	}
	return p
}
