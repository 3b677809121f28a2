package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrUnknownKind is returned by Decode for an event_kind it does not know.
var ErrUnknownKind = errors.New("unknown event_kind")

// Marshal encodes e as one JSON object with "event_kind" first.
func Marshal(e Event) ([]byte, error) {
	return AppendJSON(nil, e)
}

// AppendJSON appends the JSON encoding of e to dst.
func AppendJSON(dst []byte, e Event) ([]byte, error) {
	if e == nil {
		return dst, errors.New("event: marshal nil event")
	}
	body, err := json.Marshal(normalize(e))
	if err != nil {
		return dst, fmt.Errorf("event: marshal %s: %w", e.Kind(), err)
	}
	dst = append(dst, `{"event_kind":"`...)
	dst = append(dst, e.Kind()...)
	dst = append(dst, '"')
	if len(body) > 2 {
		dst = append(dst, ',')
		dst = append(dst, body[1:len(body)-1]...)
	}
	if s, ok := e.(Subagent); ok {
		if s.Event == nil {
			return dst, errors.New("event: subagent wraps no event")
		}
		if _, nested := s.Event.(Subagent); nested {
			return dst, errors.New("event: subagent wraps a subagent event")
		}
		dst = append(dst, `,"event":`...)
		if dst, err = AppendJSON(dst, s.Event); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// Decode decodes one event object produced by Marshal.
func Decode(data []byte) (Event, error) {
	var head struct {
		Kind  Kind            `json:"event_kind"`
		Inner json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("event: decode: %w", err)
	}
	switch head.Kind {
	case KindRunStarted:
		return decodeAs[RunStarted](data)
	case KindPartStart:
		return decodeAs[PartStart](data)
	case KindPartDelta:
		return decodeAs[PartDelta](data)
	case KindPartEnd:
		return decodeAs[PartEnd](data)
	case KindToolCallStart:
		return decodeAs[ToolCallStart](data)
	case KindToolCallProgress:
		return decodeAs[ToolCallProgress](data)
	case KindToolCallComplete:
		return decodeAs[ToolCallComplete](data)
	case KindPlanUpdate:
		return decodeAs[PlanUpdate](data)
	case KindStreamComplete:
		return decodeAs[StreamComplete](data)
	case KindRunError:
		return decodeAs[RunError](data)
	case KindSpawnSessionStart:
		return decodeAs[SpawnSessionStart](data)
	case KindSpawnSessionEnd:
		return decodeAs[SpawnSessionEnd](data)
	case KindCustom:
		return decodeAs[Custom](data)
	case KindSubagent:
		s, err := decodeAs[Subagent](data)
		if err != nil {
			return nil, err
		}
		sub := s.(Subagent)
		if len(bytes.TrimSpace(head.Inner)) == 0 || bytes.Equal(bytes.TrimSpace(head.Inner), []byte("null")) {
			return nil, errors.New("event: decode subagent: missing wrapped event")
		}
		inner, err := Decode(head.Inner)
		if err != nil {
			return nil, fmt.Errorf("event: decode subagent: %w", err)
		}
		if _, nested := inner.(Subagent); nested {
			return nil, errors.New("event: decode subagent: wraps a subagent event")
		}
		sub.Event = inner
		return sub, nil
	case "":
		return nil, errors.New("event: decode: missing event_kind")
	default:
		return nil, fmt.Errorf("event: decode: %w %q", ErrUnknownKind, head.Kind)
	}
}

func decodeAs[T Event](data []byte) (Event, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("event: decode %s: %w", v.Kind(), err)
	}
	return v, nil
}

// normalize replaces nil required containers with empty ones so that the
// wire never carries null for them.
func normalize(e Event) Event {
	switch v := e.(type) {
	case ToolCallStart:
		if len(v.RawInput) == 0 {
			v.RawInput = json.RawMessage("{}")
		}
		return v
	case ToolCallComplete:
		if len(v.ToolInput) == 0 {
			v.ToolInput = json.RawMessage("{}")
		}
		return v
	case SpawnSessionStart:
		if v.Metadata == nil {
			v.Metadata = map[string]any{}
		}
		return v
	case Custom:
		if v.EventData == nil {
			v.EventData = map[string]any{}
		}
		return v
	case PlanUpdate:
		if v.Entries == nil {
			v.Entries = []PlanEntry{}
		}
		return v
	case Subagent:
		if v.Path == nil {
			v.Path = []string{}
		}
		return v
	}
	return e
}
