package api

import "github.com/gofiber/fiber/v2"

// admitReads lets at most cap(s.reads) GET requests of the API run their handler at once
// (runtime.GOMAXPROCS: one per processor), the others waiting in arrival order: blocked
// senders on a channel are served first in, first out.
//
// Without it, 16 connections of list pages on 2 cores kept about 10 request goroutines
// runnable at once, and Go's scheduler runs those in no fixed order (one woken by the
// network runs next, the others share time slices), so a page's p99 was 5-8 times its
// median (docs/PERFORMANCE.md). Reads are CPU work on SQLite pages and encoding: one per
// processor keeps the processors busy. Writes are not held back: they can wait for
// SQLite's writer lock or for an agent to start, and would block the reads behind them.
func (s *server) admitReads(c *fiber.Ctx) error {
	if c.Method() != fiber.MethodGet {
		return c.Next()
	}
	s.reads <- struct{}{}
	defer func() { <-s.reads }()
	return c.Next()
}
