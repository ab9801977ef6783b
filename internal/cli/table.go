package cli

import (
	"bufio"
	"io"
	"text/tabwriter"
)

// Table aligns columns (a tabwriter, cells padded by two spaces) over a
// buffer: Flush writes the whole table with one write(2), where a
// tabwriter alone writes each cell and each padding with one of its own.
type Table struct {
	*tabwriter.Writer
	buf *bufio.Writer
}

// NewTable is a Table writing to w, tabs counting tabwidth columns.
func NewTable(w io.Writer, tabwidth int) *Table {
	buf := bufio.NewWriter(w)
	return &Table{Writer: tabwriter.NewWriter(buf, 0, tabwidth, 2, ' ', 0), buf: buf}
}

// Flush writes what the table holds, aligned.
func (t *Table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.buf.Flush()
}
