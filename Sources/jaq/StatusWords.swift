import AudioToolbox

/// A result code in words, for messages: "no such file, -43", or "error 'xyz?'" for a code
/// without words. `file`: the code came from opening or reading an audio file.
func describe(_ status: OSStatus, file: Bool) -> String {
    (statusMessage(status, readingFile: file).map { "\($0), " } ?? "error ") + fourCharacterCode(status)
}
