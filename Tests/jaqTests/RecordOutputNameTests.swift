import Testing
import Foundation

/// An --output whose extension and -f disagree, or that names a type jaq record does not
/// write, is refused before anything is recorded: one line naming the name (exit 64).
@Suite struct RecordOutputNameTests {
    @Test(arguments: [(["-f", "wav", "-o", "take-{n}.aiff"], "names AIFF"), (["-f", "flac", "-o", "take.wav"], "names WAVE"),
                      (["-o", "take.aac"], "jaq record writes .wav")])
    func anOutputNamingAnotherFormatIsAUsageError(_ arguments: [String], _ words: String) throws {
        let result = try jaq(["record"] + arguments + ["system"], server: nil)
        #expect(result.status == 64 && result.error.contains(words) && !result.error.contains("\n\n"), "\(result.status): \(result.error)")
    }

    /// A name -f's format may also take (an RF64 take named .wav, Opus named .ogg) passes:
    /// the usage error these meet is the next one checked (--multi without --transport), so
    /// that nothing looks for a server or records.
    @Test(arguments: [["-f", "rf64", "-o", "take.wav"], ["-f", "opus", "-o", "take.ogg"], ["-f", "wav", "-o", "take-{n}.{ext}"],
                      ["-o", "take.bwf"]])
    func anOutputNamingAFormatThatFitsIsTaken(_ arguments: [String]) throws {
        let result = try jaq(["record"] + arguments + ["--multi", "system"], server: nil)
        #expect(result.status == 64 && result.error.contains("give --transport too"), "\(result.status): \(result.error)")
    }

    /// A take in a directory that does not exist is refused in one line naming the directory,
    /// before anything is recorded (the take file looks for the directory only once it could
    /// not be made).
    @Test func anOutputInADirectoryThatDoesNotExistNamesTheDirectory() throws {
        let result = try jaq(["record", "--private-server", "-d", "0.2", "-o", "/nonexistent-jaq-dir/take-{n}.wav",
                              "system:capture_1", "system:capture_2"], server: nil)
        #expect(result.status == 1 && result.error.contains("the directory /nonexistent-jaq-dir does not exist")
                && !result.error.contains("\n\n"), "\(result.status): \(result.error)")
    }
}
