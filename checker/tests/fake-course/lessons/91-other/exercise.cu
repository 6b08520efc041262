// The starter: correct but slow.
const char* exercise_mode() { return "result"; }
double exercise_ms() { return 2.0; }
