package bounded

import "go.yaml.in/yaml/v3"

// CheckYAML measures a parsed YAML document (a document node or any node)
// against the budget's depth, node and alias bounds, and spends its nodes
// of the budget. It reads each node as written once; an alias counts the
// nodes and levels of what it stands for, measured when its anchor was
// walked. The error is an *Error at the line of the node that passed the
// bound.
func (b *Budget) CheckYAML(root *yaml.Node) error {
	if root == nil {
		return nil
	}
	w := yamlWalk{b: b, done: map[*yaml.Node]shape{}, open: map[*yaml.Node]bool{}}
	if root.Kind == yaml.DocumentNode {
		for _, c := range root.Content {
			if _, err := w.walk(c, 1); err != nil {
				return err
			}
		}
		return nil
	}
	_, err := w.walk(root, 1)
	return err
}

// shape is a subtree's size as the loader sees it: nodes and levels with
// every alias expanded.
type shape struct {
	nodes  int64
	height int
}

type yamlWalk struct {
	b    *Budget
	done map[*yaml.Node]shape // anchored nodes walked
	open map[*yaml.Node]bool  // anchored nodes being walked: an alias to one is a cycle
}

// walk measures n, found at level depth, counting its nodes into the
// budget as it goes, so that it stops at the node that passes a bound.
func (w *yamlWalk) walk(n *yaml.Node, depth int) (shape, error) {
	lim := w.b.lim
	if depth > lim.Depth {
		return shape{}, errorf(n.Line, Depth, int64(lim.Depth), "YAML nested too deeply (more than %d levels, aliases followed)", lim.Depth)
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return w.alias(n, depth)
	}
	w.b.nodes++
	if w.b.nodes > lim.Nodes {
		return shape{}, w.tooMany(n.Line)
	}
	s := shape{nodes: 1, height: 1}
	anchored := n.Anchor != ""
	if anchored {
		w.open[n] = true
	}
	for _, c := range n.Content {
		cs, err := w.walk(c, depth+1)
		if err != nil {
			return shape{}, err
		}
		s.nodes += cs.nodes
		s.height = max(s.height, cs.height+1)
	}
	if anchored {
		delete(w.open, n)
		w.done[n] = s
	}
	return s, nil
}

// alias counts what alias node n stands for, once more.
func (w *yamlWalk) alias(n *yaml.Node, depth int) (shape, error) {
	lim := w.b.lim
	t := n.Alias
	if w.open[t] {
		return shape{}, errorf(n.Line, AliasCycle, 0, "YAML alias *%s refers to a node that contains it (the value would be infinite)", n.Value)
	}
	s, ok := w.done[t]
	if !ok {
		// Not walked before the alias (a tree not in document order):
		// walk it now, as written.
		return w.walk(t, depth)
	}
	if depth+s.height-1 > lim.Depth {
		return shape{}, errorf(n.Line, Depth, int64(lim.Depth), "YAML nested too deeply (more than %d levels, aliases followed)", lim.Depth)
	}
	w.b.aliasNodes += s.nodes
	if w.b.aliasNodes > lim.AliasNodes {
		return shape{}, errorf(n.Line, AliasNodes, lim.AliasNodes, "too many YAML alias expansions (more than %d nodes reached through aliases)", lim.AliasNodes)
	}
	w.b.nodes += s.nodes
	if w.b.nodes > lim.Nodes {
		return shape{}, w.tooMany(n.Line)
	}
	return s, nil
}

func (w *yamlWalk) tooMany(line int) error {
	return errorf(line, Nodes, w.b.lim.Nodes, "too many YAML nodes (more than %d, aliases expanded)", w.b.lim.Nodes)
}
