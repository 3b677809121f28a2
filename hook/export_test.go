package hook

import "github.com/agentpool/agentpool/model"

// SetCloneParts replaces the deep copy of content blocks (to make it fail)
// until the returned function is called.
func SetCloneParts(f func([]model.Part) []model.Part) (restore func()) {
	old := cloneParts
	cloneParts = f
	return func() { cloneParts = old }
}
