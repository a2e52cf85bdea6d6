//! The null booster (seed Fig. 4–5): boosts and deboosts nothing, so its cost is the
//! framework's own — the seed's "null booster" row of Table 1 and curve of Fig. 6. Driven by
//! the pipeline like any booster.

use crate::booster::{Booster, StageCtx, StageIo, Verdict};
use crate::packet::Packet;
use crate::stats::DropReason;
use crate::wire::BoosterId;

/// Leaves every packet as it is.
#[derive(Debug, Default)]
pub struct Null;

impl Booster for Null {
    fn id(&self) -> BoosterId {
        BoosterId::Null
    }
    fn boost(
        &mut self,
        _: &StageCtx<'_>,
        _: &mut Packet,
        _: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        Ok(Verdict::Forward)
    }
    fn deboost(
        &mut self,
        _: &StageCtx<'_>,
        _: &mut Packet,
        _: &mut StageIo<'_>,
    ) -> Result<Verdict, DropReason> {
        Ok(Verdict::Forward)
    }
}
