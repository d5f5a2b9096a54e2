-- Data only: every run gets a title. Script runs are 'Workflow', delegated children
-- 'Sub-session', everything else 'Agent turn'.
UPDATE runs
SET title = CASE
    WHEN kind = 'workflow' THEN 'Workflow'
    WHEN parent_run_id IS NOT NULL THEN 'Sub-session'
    ELSE 'Agent turn'
END
WHERE title IS NULL OR trim(title) = '';
