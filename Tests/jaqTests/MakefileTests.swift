import Testing
import Foundation
import JackTestSupport

/// The Makefile installs what each job needs and no more (Docs/install.md, "Building"): building,
/// installing and packaging never pull in the tests' referees, and no answer about realtime
/// privileges is given to debconf outside the tests.
struct MakefileTests {
    func make(_ arguments: [String]) throws -> String {
        let result = try runProcess(["make", "-s", "--no-print-directory", "-C", ReleaseProducts.packageRoot.path] + arguments)
        try #require(result.status == 0, "make \(arguments): \(result.error)")
        return result.output
    }

    static let referees = ["ardour", "ffmpeg", "pipewire", "pipewire-jack", "ecasound", "nftables", "jack-capture", "jack-tools",
                           "rubberband-cli", "iproute2", "libsox-fmt-all", "jackd2"]

    @Test(arguments: ["build", "install"])
    func buildingNeedsNoReferee(_ job: String) throws {
        let packages = Set(try make(["packages-\(job)"]).split(whereSeparator: \.isWhitespace).map(String.init))
        #expect(packages.contains("libjack-jackd2-dev") && packages.contains("libsndfile1-dev"), "\(packages)")
        #expect(packages.isDisjoint(with: Self.referees), "make \(job) installs \(packages.intersection(Self.referees))")
        #expect(!packages.contains("libswresample-dev"), "nothing uses it")
    }

    @Test func theTestsInstallTheirReferees() throws {
        let packages = Set(try make(["packages-test"]).split(whereSeparator: \.isWhitespace).map(String.init))
        #expect(packages.isSuperset(of: Self.referees), "\(Self.referees.filter { !packages.contains($0) }) missing")
    }

    @Test(arguments: ["deps-build", "deps-install", "deps-demo", "deps-bench", "build", "release", "install", "demo"])
    func noRealtimeAnswerOutsideTheTests(_ target: String) throws {
        let recipe = try make(["-n", target])
        #expect(!recipe.contains("tweak_rt_limits"), "make \(target) answers debconf's realtime question")
    }

    @Test func theTestsAnswerIt() throws {
        #expect(try make(["-n", "deps"]).contains("jackd/tweak_rt_limits boolean false"))
    }
}
