--[[
Tidal's submit gate for Slurm 22.05 (job_submit/lua).

Install: JobSubmitPlugins=lua in slurm.conf, this file as job_submit.lua in the SAME directory as
slurm.conf (slurmctld looks for it there), then `scontrol reconfigure` (or restart slurmctld).

What it does, and nothing else:
  1. slurm_job_submit: EVERY job, root's included, is held at submit (priority = 0; Slurm shows it
     PENDING, Reason JobHeldUser or JobHeldAdmin) and its AdminComment is set to
     "tidal: waiting for Tidal".
     Tidal (the tidal-slurm adapter) decides when and where it runs: it pins the held job
     (scontrol update JobId=J ReqNodeList=...) and releases it; slurmctld then starts it at once.
     Tidal writes why a job waits in its AdminComment (only admins can set that; `squeue -O
     admincomment`, `scontrol show job`). The user's own --comment is kept: it carries the user's
     Tidal keys (docs/slurm.md), e.g. --comment="tidal.dev/topology-required=leaf".
  2. slurm_job_modify: only an adapter uid (TIDAL_ADAPTER_UIDS below; root by default) may change a
     job's priority, which is what `scontrol release|hold|uhold` and `Priority=` do. Without this rule
     the job's owner could `scontrol release` their own job and Slurm would start it by itself.
  3. slurm_job_modify: only an adapter uid may set a Comment that starts with "tidal:" (Tidal's word
     on the job; a user must not forge it).
  Everything else (scancel, the owner's other updates) is Slurm's normal behaviour.

Known limits (Slurm, not this file):
  - In 22.05, slurm.log_user() is discarded in slurm_job_modify: a refused update shows the user only
    Slurm's generic error ("Unspecified error" / "Error updating job"); the reason goes to slurmctld's log.
  - A requeued job (scontrol requeue, node failure with --requeue) does not pass through this file;
    the adapter must hold it again (or use `scontrol requeuehold`).
  - Fail closed: if this file does not load, slurmctld refuses to start ("failed to initialize
    job_submit plugin"); if it is broken while slurmctld runs, slurmctld keeps the previous version.
  - Interactive jobs (srun, salloc) are held as well: they wait until Tidal releases them.
]]

-- uids allowed to release, reprioritise and write "tidal:" comments: the account tidal-slurm runs as.
-- Add it here if it is not root (e.g. [64030] = true for SlurmUser "slurm").
local TIDAL_ADAPTER_UIDS = { [0] = true }
local TIDAL_PREFIX = "tidal:"
local WAITING = "tidal: waiting for Tidal"

local function is_adapter(uid)
	return TIDAL_ADAPTER_UIDS[tonumber(uid)] == true
end

local function tidal_comment(s)
	return s ~= nil and string.sub(s, 1, #TIDAL_PREFIX) == TIDAL_PREFIX
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	job_desc.priority = 0
	job_desc.admin_comment = WAITING
	slurm.log_info("tidal gate: job %s of uid %s held for Tidal",
		tostring(job_desc.name), tostring(submit_uid))
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_ptr, part_list, modify_uid)
	if is_adapter(modify_uid) then
		return slurm.SUCCESS
	end
	if job_desc.priority ~= nil and job_desc.priority ~= slurm.NO_VAL then
		slurm.log_info("tidal gate: refused priority change (release/hold/Priority=) of job %s by uid %s",
			tostring(job_ptr.job_id), tostring(modify_uid))
		slurm.log_user("Tidal schedules this job: only Tidal can release, hold or reprioritise it (see its Comment)")
		return slurm.ERROR
	end
	if tidal_comment(job_desc.comment) then
		slurm.log_info("tidal gate: refused a \"tidal:\" comment on job %s by uid %s",
			tostring(job_ptr.job_id), tostring(modify_uid))
		slurm.log_user("comments starting with \"tidal:\" are reserved for Tidal")
		return slurm.ERROR
	end
	return slurm.SUCCESS
end

slurm.log_info("tidal gate loaded (job_submit.lua)")
return slurm.SUCCESS
