// Marp CLI's configuration for the decks in this folder: the CMake 'slides' target passes it
// with --config-file, and `npx marp ...` run in slides/ finds it by itself.
export default {
  options: {
    markdown: {
      // Marp's default (breaks: true) turns every line break of a paragraph's source into <br>,
      // so text wrapped in the Markdown wrapped on the slide too. Lines now flow as in any
      // Markdown; a break that is meant is written as <br> (allowed by Marp's default html).
      breaks: false,
    },
  },
}
