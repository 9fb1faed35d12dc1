package policy

// opKind is a logical operator of a block.
type opKind uint8

const (
	opAnd       opKind = iota // every child holds
	opOr                      // some child holds
	opNot                     // not every child holds
	opNor                     // no child holds
	opCriterion               // a leaf: crit
)

// node is a parsed block, operator list or criterion. A block is an opAnd node whose
// children are its operator nodes.
type node struct {
	op       opKind
	children []node
	crit     criterion
}

// eval returns the node's value and the reasons of the criteria that decided it. pos is
// true when a true value of this node pushes towards allowing the request.
func (n *node) eval(in *Input, pos bool) (bool, Reasons) {
	if n.op == opCriterion {
		v, r := n.crit.eval(in, pos)
		return v, Reasons(1) << r
	}
	childPos := pos
	if n.op == opNot || n.op == opNor {
		childPos = !pos
	}
	var ofTrue, ofFalse Reasons
	anyTrue, allTrue := false, true
	for i := range n.children {
		v, cr := n.children[i].eval(in, childPos)
		if v {
			anyTrue = true
			ofTrue |= cr
		} else {
			allTrue = false
			ofFalse |= cr
		}
	}
	var inner bool
	switch n.op {
	case opAnd, opNot:
		inner = allTrue && len(n.children) > 0
	default: // opOr, opNor
		inner = anyTrue
	}
	rs := ofFalse
	if inner {
		rs = ofTrue
	}
	if n.op == opNot || n.op == opNor {
		return !inner, rs
	}
	return inner, rs
}
