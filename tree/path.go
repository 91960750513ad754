package tree

// Join is the path of name in the directory dir, in the form every path of
// a served tree takes: slash-separated, relative to the root, "" the root
// itself. It never cleans (path.Join would turn "" into "."): a name from a
// git tree is already one clean component.
func Join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
