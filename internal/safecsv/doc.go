// Package safecsv is the one CSV format of every file acv writes for people — the code export
// (admin API, console, acv codes export), the verification log export and the admin audit
// export — and the reader acv codes import uses to read those files back.
//
// The values in these files come from outside: a code value, the verified_by an API client
// sent, a reason, a username. A spreadsheet that opens the file reads a cell starting with
// = + - or @ as a formula (OWASP's "CSV injection"), so =HYPERLINK(…) would reach an operator.
// Escape decides, for every cell of every export, how a cell is made safe; Unescape undoes
// exactly that, so what an export wrote imports as the values it held.
package safecsv
