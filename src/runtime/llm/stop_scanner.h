// StopScanner: streams a reply's text while watching for stop strings (a chat template's
// end-of-turn text, when it arrives as text rather than as one special token). Text that
// could still be the start of a stop string is held back until it cannot; the text from a
// complete stop string on is dropped.
//
//   StopScanner s({"<|im_end|>"});
//   show(s.add("Hello <|im"));   // shows "Hello " and holds "<|im"
//   show(s.add("_end|> more"));  // shows "", stopped() is now true
#pragma once

#include <string>
#include <vector>

namespace tessera::llm {

class StopScanner {
 public:
  explicit StopScanner(std::vector<std::string> stops);
  // Adds a piece of the reply; returns the text that may be shown now.
  std::string add(const std::string& piece);
  // The held-back text, once the reply has ended another way (EOS, length, Ctrl-C).
  std::string flush();
  // A stop string was completed; nothing after it is shown.
  bool stopped() const { return stopped_; }
  // Everything returned so far (the reply as the conversation keeps it).
  const std::string& text() const { return text_; }

 private:
  std::vector<std::string> stops_;  // empty strings removed
  std::string pending_;             // held back: a tail that starts some stop string
  std::string text_;
  bool stopped_ = false;
};

}  // namespace tessera::llm
