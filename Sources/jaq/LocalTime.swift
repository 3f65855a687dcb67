import Glibc

/// The local calendar date and time of a moment, as a take's names and Broadcast Wave chunks
/// write them: from `localtime_r`, without Foundation's date formatters (whose time zone and
/// ICU set-up cost a take's start-up a few milliseconds).
struct LocalTime {
    let year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int

    /// `now`: seconds since 1970.
    init(_ now: time_t = Glibc.time(nil)) {
        var local = tm()
        var clock = now
        localtime_r(&clock, &local)
        year = Int(local.tm_year) + 1900
        month = Int(local.tm_mon) + 1
        day = Int(local.tm_mday)
        hour = Int(local.tm_hour)
        minute = Int(local.tm_min)
        second = Int(local.tm_sec)
    }

    /// "2026-11-27"
    var date: String { "\(zeroPadded(year, width: 4))-\(zeroPadded(month, width: 2))-\(zeroPadded(day, width: 2))" }
    /// "17:05:09"
    var time: String { "\(zeroPadded(hour, width: 2)):\(zeroPadded(minute, width: 2)):\(zeroPadded(second, width: 2))" }
    /// "20261127170509"
    var stamp: String {
        [zeroPadded(year, width: 4), zeroPadded(month, width: 2), zeroPadded(day, width: 2),
         zeroPadded(hour, width: 2), zeroPadded(minute, width: 2), zeroPadded(second, width: 2)].joined()
    }
}
