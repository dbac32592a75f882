// Package kmeta is the metadata of the objects Ferry makes for its users' objects: their
// names (ChildName, Knative's rule for fitting parent+suffix in 63 characters), the
// labels and annotations a child carries over from its owner, and how a reconciler puts
// its own keys back on a child without removing keys that others (kubectl, another
// controller) added. It is pure, like knative/pkg's kmeta, whose name it borrows so that
// Knative readers know where to look.
package kmeta
