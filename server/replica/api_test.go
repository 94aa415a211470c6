package replica

import "conch/server/task"

// The task layer's interfaces that production wires to this package (through server/api's
// Config). Checked here, in a test, so that replica need not import task.
var (
	_ task.Runtime = (*Replica)(nil)
	_ task.Events  = (*Bus)(nil)
)
