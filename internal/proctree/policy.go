package proctree

// Policy says which adopted zombies the subreaper reaps.
type Policy int

const (
	// ReapTrees reaps only the processes of trees (those that died in a
	// tree's cgroup, or that the /proc walk saw in a tree): the policy of
	// a library, whose program may wait for children of its own.
	ReapTrees Policy = iota
	// ReapAll reaps every zombie child but a tree's root (os/exec waits
	// for it), and its release kills every process still descended from
	// this one: the policy of a program all of whose children are trees'
	// (the agentpool CLI). A child the program starts otherwise would have
	// its exit status taken.
	ReapAll
)
