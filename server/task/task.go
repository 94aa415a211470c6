// Package task is what people do with Conch's tasks, apart from how they ask it: who may
// do what (who.go, the one place that says an admin may do anything). server/api decodes
// a request, calls this package and encodes its answer; the WebSocket's actions call the
// same methods as their REST twins.
package task

import (
	"conch/server/store"
)

// Service does what people ask of tasks, with the store.
type Service struct {
	store *store.Store
}

// New returns the Service of st.
func New(st *store.Store) *Service {
	return &Service{store: st}
}
