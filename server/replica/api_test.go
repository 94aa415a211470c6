package replica

import "conch/server/api"

// The API's interfaces that production wires to this package. Checked here, in a test:
// replica does not import api, which would bring Fiber into it.
var (
	_ api.Runtime = (*Replica)(nil)
	_ api.Events  = (*Bus)(nil)
)
