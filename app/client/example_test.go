package client_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"conch/app/client"
	"conch/shared"
)

// server is the base URL of the Conch server the examples talk to, such as
// "http://127.0.0.1:8080". TestMain starts a real one.
var server string

// TestMain runs the examples against a real `conch serve` on 127.0.0.1 with its built-in
// shell agent: bin/conch from CONCH_BIN (make test sets it), or one built here.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "conch-client-examples")
	if err != nil {
		panic(err)
	}
	code := run(m, dir)
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(m *testing.M, dir string) int {
	bin := os.Getenv("CONCH_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "conch")
		if out, err := exec.Command("go", "build", "-o", bin, "conch/server").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building conch for the examples: %v\n%s", err, out)
			return 1
		}
	}
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "conch.db"))
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting conch:", err)
		return 1
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n') // "listening on http://..."
	if err != nil {
		fmt.Fprintln(os.Stderr, "conch did not start:", err)
		return 1
	}
	server = strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	return m.Run()
}

// Create a task and start the built-in shell agent on it.
func Example() {
	ctx := context.Background()
	c := client.New(server) // .WithToken(token) for a server started with --token
	task, err := c.CreateTask(ctx, "try conch", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	sess, err := c.StartSession(ctx, task.ID, "shell", "") // "": the server picks a directory
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sess.Agent, sess.State)
	// Output: shell ready
}

// Send a prompt (for the shell agent, a command) and follow the session live until the
// turn ends; every message arrives as a summary, never with an output body.
func ExampleConn_Notifications() {
	ctx := context.Background()
	c := client.New(server)
	sess := newSession(ctx, c)
	conn, err := c.Dial(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	if err := conn.Subscribe(ctx, sess.ID); err != nil { // subscribe first: nothing is missed
		fmt.Println(err)
		return
	}
	if _, err := c.SendMessage(ctx, sess.ID, "echo hello", ""); err != nil {
		fmt.Println(err)
		return
	}
	for env := range conn.Notifications() {
		var m shared.Message
		if env.Action != shared.ActionMessageUpdated || env.Decode(&m) != nil {
			continue
		}
		if se := shared.ShellOf(m); se != nil && m.Metadata.Status.IsTerminal() {
			fmt.Printf("$ %s: %s, exit %d, %d bytes of output\n", se.Command, m.Metadata.Status, *se.Output.ExitCode, se.Output.StdoutBytes)
			return
		}
	}
	// Output: $ echo hello: completed, exit 0, 6 bytes of output
}

// Fetch a command's output, on demand, once its summary says it has some.
func ExampleClient_ShellOutput() {
	ctx := context.Background()
	c := client.New(server)
	sess := newSession(ctx, c)
	cmd := runCommand(ctx, c, sess.ID, "printf 'one\\ntwo\\n'; echo oops >&2; exit 3")
	snap, err := c.ShellOutput(ctx, sess.ID, cmd.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("status %s, exit %d\nstdout %q\nstderr %q\n", snap.Status, *snap.Output.ExitCode, snap.Output.Stdout, snap.Output.Stderr)
	// Output:
	// status failed, exit 3
	// stdout "one\ntwo\n"
	// stderr "oops\n"
}

// Page through a session's messages, newest first.
func ExampleClient_ListMessages() {
	ctx := context.Background()
	c := client.New(server)
	sess := newSession(ctx, c)
	runCommand(ctx, c, sess.ID, "true")
	page, err := c.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID, Sort: shared.SortDesc, Limit: new(2)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range page.Messages {
		fmt.Println(m.AuthorType, m.Type)
	}
	fmt.Println("more:", page.HasMore)
	// Output:
	// agent message
	// agent tool_execute
	// more: true
}

func newSession(ctx context.Context, c *client.Client) shared.Session {
	task, err := c.CreateTask(ctx, "example", "")
	if err != nil {
		panic(err)
	}
	sess, err := c.StartSession(ctx, task.ID, "shell", "")
	if err != nil {
		panic(err)
	}
	return sess
}

// runCommand runs one command in the session and returns its message once it ended.
func runCommand(ctx context.Context, c *client.Client, sessionID, command string) shared.Message {
	conn, err := c.Dial(ctx)
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	if err := conn.Subscribe(ctx, sessionID); err != nil {
		panic(err)
	}
	if _, err := c.SendMessage(ctx, sessionID, command, ""); err != nil {
		panic(err)
	}
	var cmd shared.Message
	for env := range conn.Notifications() {
		var s shared.Session
		if env.Action == shared.ActionSessionUpdated && env.Decode(&s) == nil && s.State == shared.SessionReady && cmd.ID != "" {
			return cmd // the turn is over: every message of it has arrived
		}
		var m shared.Message
		if env.Action != shared.ActionSessionUpdated && env.Decode(&m) == nil && shared.ShellOf(m) != nil {
			cmd = m
		}
	}
	panic(conn.Err())
}
