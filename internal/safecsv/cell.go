package safecsv

// Guard is the prefix Escape puts before a cell a spreadsheet would otherwise read as a
// formula: an apostrophe. Spreadsheets take a leading apostrophe as "this cell is text" and do
// not show it, so an operator sees the value itself.
const Guard = '\''

// guarded tells whether a cell starting with byte c is written with Guard before it. It is the
// one place that decides which cells are escaped; Escape and Unescape both ask it, so they
// never disagree.
//
// = + - @ start a formula; a tab, carriage return or line feed is skipped by some spreadsheets
// before they look at the next character. (The line feed matters to the reader too:
// encoding/csv reads a CRLF inside a quoted cell as a lone LF, so a guarded CR LF cell comes
// back as Guard, LF, still recognisably guarded.) Guard itself is in the set so that escaping
// stays reversible: a value that already starts with an apostrophe, such as `'=x`, is written
// with a second one before it, and the reader, which removes one Guard only before a character
// of this set, cannot take it for an escaped `=x`.
func guarded(c byte) bool {
	switch c {
	case '=', '+', '-', '@', '\t', '\r', '\n', Guard:
		return true
	}
	return false
}

// Escape is how every export writes a cell: a value starting with = + - @, a tab, a carriage
// return, a line feed or an apostrophe gets an apostrophe before it; every other value is
// written as it is. (encoding/csv then quotes the cell where CSV needs it.)
func Escape(cell string) string {
	if cell != "" && guarded(cell[0]) {
		return string(Guard) + cell
	}
	return cell
}

// Unescape is how an import reads a cell: the inverse of Escape. An apostrophe followed by a
// character Escape guards is removed; any other cell, one apostrophe followed by an ordinary
// character included, is read as it is. Unescape(Escape(v)) == v for every v.
func Unescape(cell string) string {
	if len(cell) >= 2 && cell[0] == Guard && guarded(cell[1]) {
		return cell[1:]
	}
	return cell
}
