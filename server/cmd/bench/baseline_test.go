package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// fakeConch answers /ok as a snapshot does, and the bad answers a baseline must refuse.
func fakeConch() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("ETag", `"m1.abc"`)
			w.Header().Set("Vary", "Accept-Encoding")
			w.Write([]byte(`{"message_id":"m1"}`))
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write([]byte("\x1f\x8b"))
		case "/fail":
			http.Error(w, "boom", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
}

func TestBaselineAnswersWhatWasRecorded(t *testing.T) {
	conch := fakeConch()
	defer conch.Close()
	answers, err := record(context.Background(), []string{conch.URL + "/ok"})
	if err != nil {
		t.Fatal(err)
	}
	base := httptest.NewServer(baselineHandler(answers))
	defer base.Close()
	want, wantBody := get(t, conch.URL+"/ok")
	got, gotBody := get(t, base.URL+"/ok")
	if got.StatusCode != http.StatusOK || string(gotBody) != string(wantBody) {
		t.Fatalf("baseline answered %s %q, want 200 %q", got.Status, gotBody, wantBody)
	}
	for name, v := range want.Header {
		if name != "Date" && !slices.Equal(got.Header[name], v) {
			t.Errorf("header %s: baseline %q, Conch %q", name, got.Header[name], v)
		}
	}
	if r, _ := get(t, base.URL+"/other"); r.StatusCode != http.StatusNotFound {
		t.Errorf("an unrecorded path: %s, want 404", r.Status)
	}
}

func TestBaselineRefusesBadAnswers(t *testing.T) {
	conch := fakeConch()
	defer conch.Close()
	for _, u := range []string{conch.URL + "/fail", conch.URL + "/missing", conch.URL + "/gzip",
		"http://example.com/ok", "http://127.0.0.1:1/ok"} {
		if _, err := record(context.Background(), []string{conch.URL + "/ok", u}); err == nil {
			t.Errorf("recorded %s", u)
		}
	}
	if err := baseline(context.Background(), nil, io.Discard); err == nil {
		t.Error("a baseline of no URL started")
	}
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}
