package api

import (
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"conch/server/waittest"
)

// TestAdmitReadsHoldsGETsToTheSlotsAndLetsWritesPass: with 2 slots and 8 GETs whose
// handlers wait for the test, at most 2 run at once and each further one starts only when
// one ends; a POST meanwhile is not held back.
func TestAdmitReadsHoldsGETsToTheSlotsAndLetsWritesPass(t *testing.T) {
	const slots, gets = 2, 8
	s := &server{reads: make(chan struct{}, slots)}
	entered, release := make(chan struct{}, gets+1), make(chan struct{})
	var active, most atomic.Int32
	hold := func(c *fiber.Ctx) error {
		n := active.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		entered <- struct{}{}
		<-release
		active.Add(-1)
		return c.SendStatus(fiber.StatusNoContent)
	}
	app := fiber.New()
	app.Use(s.admitReads)
	app.Get("/read", hold)
	app.Post("/write", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })

	done := make(chan error, gets)
	for range gets {
		go func() {
			resp, err := app.Test(httptest.NewRequest("GET", "/read", nil), -1)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
	}
	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(waittest.Limit(t)):
			t.Fatalf("no %s within 10s", what)
		}
	}
	for range slots {
		wait(entered, "GET entered")
	}
	resp, err := app.Test(httptest.NewRequest("POST", "/write", nil), 10_000)
	if err != nil || resp.StatusCode != fiber.StatusNoContent {
		t.Fatalf("POST while the GET slots are taken: %v %v", resp, err)
	}
	for i := slots; i < gets; i++ {
		release <- struct{}{} // one ends, so the next may enter
		wait(entered, "GET entered after one ended")
	}
	for range slots {
		release <- struct{}{}
	}
	for range gets {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if m := most.Load(); m != slots {
		t.Errorf("at most %d GETs ran at once, want %d", m, slots)
	}
}
