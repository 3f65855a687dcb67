import Testing
@testable import jaq

/// The start/stop logic `jaq record` and `jaq play` share, stepped without a server.
@Suite struct TriggerTests {
    @Test func nowStartsOnTheQueuesOriginOnce() throws {
        var trigger = try Trigger(at: nil, in: nil, transport: false, onEnter: false)
        trigger.arm(now: 1000, deviceRate: 48000, origin: 3400, transportChanges: 0)
        #expect(trigger.step(.init(now: 1200)) == .start(frame: 3400))
        #expect(trigger.step(.init(now: 1400)) == nil)
        #expect(trigger.phase == .running)
    }

    @Test func aFrameOrADelayNamesTheStartFrameEvenWhenItHasPassed() throws {
        var at = try Trigger(at: 500, in: nil, transport: false, onEnter: false)
        at.arm(now: 90_000, deviceRate: 48000, origin: 92_400, transportChanges: 0)
        #expect(at.step(.init(now: 90_000)) == .start(frame: 500))
        var delay = try Trigger(at: nil, in: TimeValue(seconds: 1.5), transport: false, onEnter: false)
        delay.arm(now: 10_000, deviceRate: 48000, origin: 12_400, transportChanges: 0)
        #expect(delay.step(.init(now: 10_000)) == .start(frame: 10_000 + 72_000))
    }

    @Test func theTransportStartsOnItsRollFrameAndStopsOnItsStopFrame() throws {
        var trigger = try Trigger(at: nil, in: nil, transport: true, onEnter: false)
        // Two changes happened before arming (it rolled and stopped): they do not count.
        trigger.arm(now: 1000, deviceRate: 48000, origin: 3400, transportChanges: 2)
        #expect(trigger.step(.init(now: 2000, transportChanges: 2, transportRolling: false, transportFrame: 900)) == nil)
        #expect(trigger.step(.init(now: 3000, transportChanges: 2, transportRolling: true, transportFrame: 900)) == nil,
                "a rolling flag without a new change is the old roll")
        #expect(trigger.step(.init(now: 9000, transportChanges: 3, transportRolling: true, transportFrame: 8_704, transportRollFrame: 8_704)) == .start(frame: 8_704))
        #expect(trigger.step(.init(now: 20_000, transportChanges: 3, transportRolling: true, transportFrame: 8_704)) == nil)
        #expect(trigger.step(.init(now: 40_000, transportChanges: 4, transportRolling: false, transportFrame: 39_936)) == .stop(frame: 39_936))
        #expect(trigger.step(.init(now: 50_000, transportChanges: 5, transportRolling: true, transportFrame: 49_920)) == nil,
                "a take stopped by the transport stays stopped")
        #expect(trigger.phase == .stopped)
    }

    @Test func aQuickRollAndStopBetweenTwoStepsStartsOnTheRollThenStops() throws {
        // A DAW rolls and stops before the main loop looks again: both changes are new.
        var trigger = try Trigger(at: nil, in: nil, transport: true, onEnter: false)
        trigger.arm(now: 1000, deviceRate: 48000, origin: 3400, transportChanges: 0)
        let seen = Trigger.Observation(now: 30_000, transportChanges: 2, transportRolling: false,
                                       transportFrame: 20_480, transportRollFrame: 10_240)
        #expect(trigger.step(seen) == .start(frame: 10_240))
        #expect(trigger.step(seen) == .stop(frame: 20_480))
        #expect(trigger.phase == .stopped)
    }

    @Test func aQuickStopAndRestartBetweenTwoStepsStopsOnTheStopAndTheRestartStartsTheNextTake() throws {
        // Rolling since change 1; before the main loop looks again the DAW stops (2) and rolls (3).
        var trigger = try Trigger(at: nil, in: nil, transport: true, onEnter: false)
        trigger.arm(now: 1000, deviceRate: 48000, origin: 3400, transportChanges: 0)
        #expect(trigger.step(.init(now: 12_000, transportChanges: 1, transportRolling: true, transportFrame: 10_240,
                                   transportRollFrame: 10_240)) == .start(frame: 10_240))
        let restarted = Trigger.Observation(now: 40_000, transportChanges: 3, transportRolling: true, transportFrame: 30_720,
                                            transportRollFrame: 30_720, transportStopFrame: 29_952)
        #expect(trigger.step(restarted) == .stop(frame: 29_952), "the take ends on the stop, not later")
        // jaq record --multi arms again: the roll already seen is the next take's start.
        trigger.rearm(transportChanges: 3)
        #expect(trigger.step(restarted) == .start(frame: 30_720))
        // Without the restart, a plain stop re-arms to wait for the next roll.
        #expect(trigger.step(.init(now: 50_000, transportChanges: 4, transportRolling: false, transportFrame: 40_960)) == .stop(frame: 40_960))
        trigger.rearm(transportChanges: 4)
        #expect(trigger.step(.init(now: 60_000, transportChanges: 4, transportRolling: false, transportFrame: 40_960)) == nil)
    }

    @Test func aQuickRollAndStopThenARollBeforeTheNextStepAreTwoTakes() throws {
        var trigger = try Trigger(at: nil, in: nil, transport: true, onEnter: false)
        trigger.arm(now: 1000, deviceRate: 48000, origin: 3400, transportChanges: 0)
        // Rolled (1) and stopped (2) before the first look: the take starts on the roll.
        #expect(trigger.step(.init(now: 30_000, transportChanges: 2, transportRolling: false, transportFrame: 20_480,
                                   transportRollFrame: 10_240, transportStopFrame: 20_480)) == .start(frame: 10_240))
        // Rolling again (3) by the next look: the take still ends on the stop.
        let again = Trigger.Observation(now: 40_000, transportChanges: 3, transportRolling: true, transportFrame: 30_720,
                                        transportRollFrame: 30_720, transportStopFrame: 20_480)
        #expect(trigger.step(again) == .stop(frame: 20_480))
        trigger.rearm(transportChanges: 3)
        #expect(trigger.step(again) == .start(frame: 30_720))
    }

    @Test func frames64BitPastThe32BitWrapComeThroughUnchanged() throws {
        // JackSession extends the transport's 32-bit frame time; the trigger works on 64 bits.
        let past32 = Int64(UInt32.max) + 10_000
        var trigger = try Trigger(at: nil, in: nil, transport: true, onEnter: false)
        trigger.arm(now: past32 - 100, deviceRate: 48000, origin: past32, transportChanges: 0)
        #expect(trigger.step(.init(now: past32 + 500, transportChanges: 1, transportRolling: true, transportFrame: past32 + 256,
                                    transportRollFrame: past32 + 256))
                == .start(frame: past32 + 256))
    }

    @Test func enterStartsOnTheFrameItWasSeen() throws {
        var trigger = try Trigger(at: nil, in: nil, transport: false, onEnter: true)
        trigger.arm(now: 0, deviceRate: 48000, origin: 2400, transportChanges: 0)
        #expect(trigger.step(.init(now: 4800)) == nil)
        #expect(trigger.step(.init(now: 9600, enterPressed: true)) == .start(frame: 9600))
        #expect(!trigger.stopsWithTransport)
    }

    @Test func moreThanOneStartIsRefused() {
        #expect(throws: TriggerError.self) { try Trigger(at: 1, in: TimeValue(seconds: 2), transport: false, onEnter: false) }
        do { _ = try Trigger(at: nil, in: TimeValue(seconds: 1), transport: true, onEnter: false) } catch {
            #expect(error.options == ["--in", "--transport"])
            #expect(error.description == "--in and --transport: a take or playback starts one way; give one of them")
        }
        #expect(throws: TriggerError.self) { try Trigger(at: nil, in: nil, transport: true, onEnter: true) }
    }
}

/// Take file names from --output patterns.
@Suite struct TakeNameTests {
    @Test func fieldsAreReplacedOnceAndOtherBracesStay() {
        let fields: [(key: String, value: String)] = [("take", zeroPadded(7, width: 3)), ("track", "{n}"), ("n", zeroPadded(12, width: 2)),
                                                      ("date", "2026-11-23"), ("ext", "wav")]
        #expect(expandTakeName("take-{take}-{track}.{ext}", fields) == "take-007-{n}.wav", "a value is not searched for fields")
        #expect(expandTakeName("{date}/{n}-{n}.{ext}", fields) == "2026-11-23/12-12.wav")
        #expect(expandTakeName("{nope}{{take}}{", fields) == "{nope}{007}{")
        #expect(expandTakeName("plain", fields) == "plain")
        #expect(zeroPadded(1234, width: 3) == "1234")
    }

    @Test func namesKeepLettersDigitsAndThreeMarksAndMakeEveryOtherCharacterOneUnderscore() {
        #expect(sanitized("ardour_Audio 1/out+L") == "ardour_Audio_1_out_L")
        #expect(sanitized("Take-01.v2_ok") == "Take-01.v2_ok")
        // A grapheme of two scalars (e + combining acute), an emoji, CR LF: one "_" each.
        #expect(sanitized("cafe\u{301}🎸\r\nx") == "caf___x")
        #expect(sanitized("é:ü") == "___")
        #expect(sanitized(String(repeating: "a", count: 40)) == String(repeating: "a", count: 32))
        #expect(sanitized(String(repeating: "é", count: 60), limit: 48) == String(repeating: "_", count: 48))
        #expect(sanitized("") == "")
    }
}
