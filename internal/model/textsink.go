package model

import "context"

// TextSink is told a streamed call's text as it arrives, for people watching the run (the run
// page): nothing may depend on it, since the call's result is what the journal records. Restart
// says the text so far is void (the call is being tried again from the start).
type TextSink interface {
	Text(s string)
	Restart()
}

type textSinkKey struct{}

// WithTextSink returns ctx carrying sink: a streamed Complete under it tells sink each piece of
// text the model writes.
func WithTextSink(ctx context.Context, sink TextSink) context.Context {
	if sink == nil {
		return ctx
	}
	return context.WithValue(ctx, textSinkKey{}, sink)
}

// SinkOf is the TextSink ctx carries, or nil.
func SinkOf(ctx context.Context) TextSink {
	s, _ := ctx.Value(textSinkKey{}).(TextSink)
	return s
}

// textTo tells ctx's sink, if any, a piece of text.
func textTo(ctx context.Context, s string) {
	if s == "" {
		return
	}
	if sink := SinkOf(ctx); sink != nil {
		sink.Text(s)
	}
}
