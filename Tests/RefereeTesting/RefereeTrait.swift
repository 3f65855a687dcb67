import Testing
import JackTestSupport

/// `@Suite(.refereeCrashesAreKnownIssues)`: a test of the suite that ends with a referee's crash
/// (`RefereeCrashed`, thrown by `runReferee` after its runs, or by `waitForReferee` and passed on
/// by `withRefereeRetries`) records that crash as a known issue naming the tool — the referee's
/// failure, not jaq's — instead of failing. Whatever the test recorded before the crash stands.
public struct RefereeCrashesAreKnownIssues: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public init() {}

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        do {
            try await function()
        } catch let crash as RefereeCrashed where testCase != nil {
            withKnownIssue(Comment(rawValue: crash.description)) { throw crash }
        }
    }
}

extension Trait where Self == RefereeCrashesAreKnownIssues {
    /// A referee's crash is a known issue naming the tool (`RefereeCrashesAreKnownIssues`).
    public static var refereeCrashesAreKnownIssues: Self { Self() }
}
