#!/bin/bash
#PBS -W depend=afterok:{P1}:{P2}
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
