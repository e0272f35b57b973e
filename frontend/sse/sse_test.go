package sse

import "testing"

// TestFrames: a frame's fields, a name that would break the frame, a
// comment, the retry field.
func TestFrames(t *testing.T) {
	b := End(append(Head(nil, "data"), `{"a":1}`...))
	b = End(append(Head(b, "bad\nname"), `1`...))
	b = Greeting(Comment(b, "ping"), "hello\nworld", 2000)
	want := "event:data\ndata:{\"a\":1}\n\nevent:badname\ndata:1\n\n: ping\n\n: hello world\nretry: 2000\n\n"
	if string(b) != want {
		t.Errorf("frames = %q, want %q", b, want)
	}
}
