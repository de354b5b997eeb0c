//! Conversions written once for both ways. [`wire!`] takes a domain struct, its proto
//! message and one list of fields, each through a codec (how its value looks on the wire
//! and how it reads back), and writes `From<Domain> for Message` (the server's answer) and
//! `TryFrom<Message> for Domain` (the client reading it). Both destructure exhaustively:
//! a field added on either side is a compile error until it is listed.
//!
//! ```text
//! wire! {
//!     Domain <=> pb::Message {
//!         same_name,                 // the same type both ways
//!         maybe: text,               // Option<String> <-> String, empty for none
//!         ours = theirs: size,       // renamed on the wire, usize <-> u64
//!         limit: count(10, 1_000),   // a codec's arguments: `to(v, args)`,
//!                                    // `from(v, "limit", args)` (the wire's field name)
//!         part => { a, b }: pair,    // one domain field as several on the wire, in the
//!                                    // order the codec's tuple gives them
//!         { c, d } => joined: pair,  // several domain fields as one on the wire
//!     }
//!     to_wire(d) { computed: d.method() }    // only on the wire, from &mut Domain
//!     from_wire(m) { unsent: Vec::new() }    // only in the domain, from &mut Message
//! }
//! ```
//!
//! The computed fields are worked out first, in order, from the value as it came: one may
//! take (`std::mem::take`) what an earlier one has read.

/// Both conversions between a domain struct and its proto message, from one field list
/// (see the module's documentation).
macro_rules! wire {
    (
        $domain:ident <=> $($wire:ident)::+ { $($fields:tt)* }
        $($rest:tt)*
    ) => {
        $crate::api::convert::wire::wire!(
            @munch ($domain) ($($wire)::+) ($($rest)*) [] [] [] $($fields)*
        );
    };
    // Every field read: write the two conversions.
    (@munch ($domain:ident) ($wire:path) ($($rest:tt)*) [$($one:tt)*] [$($group:tt)*] [$($joined:tt)*]) => {
        $crate::api::convert::wire::wire!(@impl ($domain) ($wire) [$($one)*] [$($group)*] [$($joined)*] $($rest)*);
    };
    (@munch $d:tt $w:tt $r:tt $one:tt [$($group:tt)*] $joined:tt $ours:ident => { $($theirs:ident),+ $(,)? } : $codec:ident $(, $($more:tt)*)?) => {
        $crate::api::convert::wire::wire!(@munch $d $w $r $one [$($group)* ($ours [$($theirs)+] $codec)] $joined $($($more)*)?);
    };
    (@munch $d:tt $w:tt $r:tt $one:tt $group:tt [$($joined:tt)*] { $($ours:ident),+ $(,)? } => $theirs:ident : $codec:ident $(, $($more:tt)*)?) => {
        $crate::api::convert::wire::wire!(@munch $d $w $r $one $group [$($joined)* ([$($ours)+] $theirs $codec)] $($($more)*)?);
    };
    (@munch $d:tt $w:tt $r:tt [$($one:tt)*] $group:tt $joined:tt $ours:ident = $theirs:ident : $codec:ident ($($arg:expr),*) $(, $($more:tt)*)?) => {
        $crate::api::convert::wire::wire!(@munch $d $w $r [$($one)* ($ours $theirs $codec [$($arg),*])] $group $joined $($($more)*)?);
    };
    (@munch $d:tt $w:tt $r:tt [$($one:tt)*] $group:tt $joined:tt $ours:ident = $theirs:ident : $codec:ident $(, $($more:tt)*)?) => {
        $crate::api::convert::wire::wire!(@munch $d $w $r [$($one)* ($ours $theirs $codec [])] $group $joined $($($more)*)?);
    };
    (@munch $d:tt $w:tt $r:tt [$($one:tt)*] $group:tt $joined:tt $ours:ident = $theirs:ident $(, $($more:tt)*)?) => {
        $crate::api::convert::wire::wire!(@munch $d $w $r [$($one)* ($ours $theirs same [])] $group $joined $($($more)*)?);
    };
    (@munch $d:tt $w:tt $r:tt [$($one:tt)*] $group:tt $joined:tt $name:ident : $codec:ident ($($arg:expr),*) $(, $($more:tt)*)?) => {
        $crate::api::convert::wire::wire!(@munch $d $w $r [$($one)* ($name $name $codec [$($arg),*])] $group $joined $($($more)*)?);
    };
    (@munch $d:tt $w:tt $r:tt [$($one:tt)*] $group:tt $joined:tt $name:ident : $codec:ident $(, $($more:tt)*)?) => {
        $crate::api::convert::wire::wire!(@munch $d $w $r [$($one)* ($name $name $codec [])] $group $joined $($($more)*)?);
    };
    (@munch $d:tt $w:tt $r:tt [$($one:tt)*] $group:tt $joined:tt $name:ident $(, $($more:tt)*)?) => {
        $crate::api::convert::wire::wire!(@munch $d $w $r [$($one)* ($name $name same [])] $group $joined $($($more)*)?);
    };
    (
        @impl ($domain:ident) ($wire:path)
        [$(($ours:ident $theirs:ident $codec:ident [$($arg:expr),*]))*]
        [$(($gours:ident [$($gtheirs:ident)+] $gcodec:ident))*]
        [$(([$($jours:ident)+] $jtheirs:ident $jcodec:ident))*]
        $(to_wire($tv:ident) { $($tf:ident : $te:expr),* $(,)? })?
        $(from_wire($fv:ident) { $($ff:ident : $fe:expr),* $(,)? })?
    ) => {
        impl From<$domain> for $wire {
            #[allow(unused_mut)]
            fn from(mut value: $domain) -> Self {
                $(let $tv = &mut value; $(let $tf = $te;)*)?
                let $domain { $($ours: _,)* $($gours: _,)* $($($jours: _,)+)* $($($ff: _,)*)? } =
                    &value;
                $(let ($($gtheirs,)+) = $crate::api::convert::codec::$gcodec::to(value.$gours);)*
                $wire {
                    $($theirs: $crate::api::convert::codec::$codec::to(value.$ours $(, $arg)*),)*
                    $($($gtheirs,)+)*
                    $($jtheirs: $crate::api::convert::codec::$jcodec::to(($(value.$jours,)+)),)*
                    $($($tf,)*)?
                }
            }
        }

        impl TryFrom<$wire> for $domain {
            type Error = tonic::Status;

            #[allow(unused_mut)]
            fn try_from(mut value: $wire) -> Result<Self, tonic::Status> {
                $(let $fv = &mut value; $(let $ff = $fe;)*)?
                let $wire { $($theirs: _,)* $($($gtheirs: _,)+)* $($jtheirs: _,)* $($($tf: _,)*)? } =
                    &value;
                $(let ($($jours,)+) = $crate::api::convert::codec::$jcodec::from(value.$jtheirs)?;)*
                Ok($domain {
                    $($ours: $crate::api::convert::codec::$codec::from(
                        value.$theirs, stringify!($theirs) $(, $arg)*
                    )?,)*
                    $($gours: $crate::api::convert::codec::$gcodec::from(($(value.$gtheirs,)+))?,)*
                    $($($jours,)+)*
                    $($($ff,)*)?
                })
            }
        }
    };
}

pub(crate) use wire;
