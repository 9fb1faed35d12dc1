package policy

// opKind is a logical operator of a block.
type opKind uint8

const (
	opAnd       opKind = iota // every child holds
	opOr                      // some child holds
	opNone                    // no child holds ("not")
	opNotAll                  // some child does not hold ("nor")
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
	if n.op == opNone || n.op == opNotAll {
		childPos = !pos
	}
	var ofTrue, ofFalse Reasons
	anyTrue, allTrue := false, true
	for i := range n.children {
		c := &n.children[i]
		var v bool
		var cr Reasons
		if c.op == opCriterion { // a criterion without the call of eval for it
			var r Reason
			v, r = c.crit.eval(in, childPos)
			cr = Reasons(1) << r
		} else {
			v, cr = c.eval(in, childPos)
		}
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
	case opAnd, opNotAll:
		inner = allTrue && len(n.children) > 0
	default: // opOr, opNone
		inner = anyTrue
	}
	rs := ofFalse
	if inner {
		rs = ofTrue
	}
	if n.op == opNone || n.op == opNotAll {
		return !inner, rs
	}
	return inner, rs
}
