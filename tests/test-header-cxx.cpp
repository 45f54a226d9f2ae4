// placeholder
int main() { return 77; }
