// The reference: fast.
const char* exercise_mode() { return "result"; }
double exercise_ms() { return 0.5; }
