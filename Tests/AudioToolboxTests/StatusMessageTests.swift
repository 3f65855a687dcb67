import AudioToolbox
import Testing

/// Result codes in words, the one table jaq's messages and `jaq info` print.
@Suite struct StatusMessageTests {
    @Test func fileCodesHaveWords() {
        #expect(statusMessage(kAudioFileFileNotFoundError) == "no such file")
        #expect(statusMessage(kAudio_FilePermissionError) == "permission denied")
        #expect(statusMessage(kAudioFileInvalidFileError) == "damaged or truncated audio file")
        #expect(statusMessage(kAudioFileUnsupportedDataFormatError) == "unsupported data format")
        #expect(statusMessage(dskFulErr) == "disk full")
        #expect(statusMessage(dupFNErr) == "file exists")
    }

    @Test func anUnknownTypeReadsAsNotAnAudioFileWhenReading() {
        #expect(statusMessage(kAudioFileUnsupportedFileTypeError, readingFile: true) == "not an audio file of a type jaq reads")
        #expect(statusMessage(kAudioFileUnsupportedFileTypeError) == "unsupported file type")
    }

    @Test func queueCodesNameTheServer() {
        #expect(statusMessage(kAudioQueueErr_InvalidDevice) == "no such JACK server or port")
        #expect(statusMessage(kAudioQueueErr_QueueInvalidated) == "the JACK server went away")
    }

    @Test func codesWithoutWordsAreNil() {
        #expect(statusMessage(noErr) == nil)
        #expect(statusMessage(kAudioQueueErr_InvalidBuffer) == nil)
    }
}
