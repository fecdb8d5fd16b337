// Linked with one layer of the library and the layers below it, nothing else: every object of
// the layer is linked, so a call into a layer above leaves a symbol undefined and the build fails.
int main() { return 0; }
