package shared

import "time"

// Web Push (docs/API.md, "Notifications"): a browser that opts in gives the server its
// PushSubscription; the server then tells it, through the browser's push service, when a
// task it watches needs someone.

// PushSubscription is a browser's PushSubscription as its toJSON gives it (hence
// expirationTime's case), with EveryTask: told of every task, not only those one owns or
// edits (POST /api/v1/push/subscriptions).
type PushSubscription struct {
	Endpoint       string   `json:"endpoint"`
	ExpirationTime *float64 `json:"expirationTime"` // the browser's (often null); not used
	Keys           PushKeys `json:"keys"`
	EveryTask      bool     `json:"every_task,omitempty"`
	// Replaces is the endpoint of the subscription this one renews (the service worker's
	// pushsubscriptionchange): the server deletes it, and this one keeps its EveryTask.
	Replaces string `json:"replaces,omitempty"`
}

// PushKeys are the subscription's keys, base64url: the browser's P-256 public key that
// the payload is encrypted to and the 16-byte authentication secret (RFC 8291).
type PushKeys struct {
	P256dh string `json:"p256dh"`
	Auth   string `json:"auth"`
}

// PushSubscribed answers a subscription: never its keys.
type PushSubscribed struct {
	Endpoint  string    `json:"endpoint"`
	EveryTask bool      `json:"every_task"`
	CreatedAt time.Time `json:"created_at"`
}

// PushUnsubscribe names the subscription to end (DELETE /api/v1/push/subscriptions).
type PushUnsubscribe struct {
	Endpoint string `json:"endpoint"`
}

// PushServerKey is the server's VAPID public key (GET /api/v1/push/key), base64url of the
// uncompressed P-256 point: the browser's applicationServerKey.
type PushServerKey struct {
	PublicKey string `json:"public_key"`
}

// PushNotification is the payload a browser's service worker shows: small, because a push
// service carries at most about 4 KiB and sees its size. Title is the task's title (a
// person's), Body says what is needed (with the agent's words, marked and cut), Path is
// the session page, Tag replaces an older notification of the same session.
type PushNotification struct {
	Title string `json:"title"`
	Body  string `json:"body"`
	Path  string `json:"path"`
	Tag   string `json:"tag"`
}
