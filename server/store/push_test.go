package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"conch/shared"
)

// The database's VAPID keys are made once: a later server reads the first one's.
func TestVAPIDKeysOncePerDatabase(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	for i, gen := range []string{"first", "second"} {
		private, public, err := s.VAPIDKeys(ctx, func() (string, string, error) { return gen + "-private", gen + "-public", nil })
		if err != nil || private != "first-private" || public != "first-public" {
			t.Errorf("call %d: %q %q (%v), want the first keys", i, private, public, err)
		}
	}
}

// A task's watchers are the browsers of its owner and editors and those that asked for
// every task, while their sign-in lasts; a subscription belongs to one account, moves
// with its browser, and a renewed one replaces the old and keeps its choice.
func TestPushWatchers(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	ctx := context.Background()
	acc := map[string]shared.Account{}
	for login, role := range map[string]string{"owner": shared.RoleMember, "editor": shared.RoleMember, "viewer": shared.RoleViewer, "other": shared.RoleMember} {
		a, err := s.CreateAccount(ctx, login, role, "")
		if err != nil {
			t.Fatal(err)
		}
		acc[login] = a
	}
	task, err := s.CreateTaskOn(ctx, "watched", "", "", "", "", acc["owner"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ShareTask(ctx, task.ID, "editor"); err != nil {
		t.Fatal(err)
	}
	signIn, err := s.CreateSignIn(ctx, SignIn{AccountID: acc["owner"].ID}, time.Now().Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	subscribe := func(login, through, endpoint string, every bool, replaces string) {
		t.Helper()
		sub := shared.PushSubscription{Endpoint: endpoint, Keys: shared.PushKeys{P256dh: "k-" + endpoint, Auth: "a-" + endpoint},
			EveryTask: every, Replaces: replaces}
		got, err := s.Subscribe(ctx, acc[login].ID, through, sub)
		if err != nil || got.Endpoint != endpoint {
			t.Fatalf("subscribe %s: %+v (%v)", endpoint, got, err)
		}
	}
	watchers := func(want ...string) {
		t.Helper()
		subs, err := s.Watchers(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, sub := range subs {
			if sub.Keys.P256dh != "k-"+sub.Endpoint || sub.Keys.Auth != "a-"+sub.Endpoint {
				t.Errorf("keys of %s: %+v", sub.Endpoint, sub.Keys)
			}
			got = append(got, sub.Endpoint)
		}
		if !slices.Equal(got, want) {
			t.Errorf("watchers %v, want %v", got, want)
		}
	}
	subscribe("owner", signIn, "https://push.example/a-owner", false, "")
	subscribe("editor", "", "https://push.example/b-editor", false, "")
	subscribe("viewer", "", "https://push.example/c-viewer", true, "")
	subscribe("other", "", "https://push.example/d-other", false, "")
	watchers("https://push.example/a-owner", "https://push.example/b-editor", "https://push.example/c-viewer")

	if err := s.DeleteSignIn(ctx, signIn); err != nil {
		t.Fatal(err)
	}
	watchers("https://push.example/b-editor", "https://push.example/c-viewer")

	// Someone else signs in on other's browser: the subscription is theirs now.
	subscribe("editor", "", "https://push.example/d-other", false, "")
	watchers("https://push.example/b-editor", "https://push.example/c-viewer", "https://push.example/d-other")
	if err := s.Unsubscribe(ctx, acc["other"].ID, "https://push.example/d-other"); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("another account unsubscribed a browser: %v", err)
	}
	if err := s.DropPushSubscription(ctx, "https://push.example/d-other"); err != nil {
		t.Fatal(err)
	}

	// The viewer's browser renews its subscription: the old goes, every task stays.
	subscribe("viewer", "", "https://push.example/e-renewed", false, "https://push.example/c-viewer")
	watchers("https://push.example/b-editor", "https://push.example/e-renewed")
	// Another account cannot drop a subscription by renewing it.
	subscribe("other", "", "https://push.example/f-other", false, "https://push.example/b-editor")
	watchers("https://push.example/b-editor", "https://push.example/e-renewed")

	if err := s.Unsubscribe(ctx, acc["viewer"].ID, "https://push.example/e-renewed"); err != nil {
		t.Fatal(err)
	}
	watchers("https://push.example/b-editor")
}
