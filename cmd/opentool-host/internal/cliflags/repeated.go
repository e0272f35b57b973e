package cliflags

import "strings"

// Repeated is the value of a repeatable cli.GenericFlag whose values may
// hold commas (--secret-for NAME=PLUGIN,PLUGIN): each occurrence is one
// value, as given, where a cli.StringSliceFlag would split it at its
// commas. Read it with c.Generic(name).(*Repeated).Values.
type Repeated struct {
	// Values are the flag's values, in the order given.
	Values []string
}

// Set adds one occurrence's value.
func (r *Repeated) Set(v string) error {
	r.Values = append(r.Values, v)
	return nil
}

// String is the values joined by spaces ("" for none), as help shows a
// default.
func (r *Repeated) String() string { return strings.Join(r.Values, " ") }
