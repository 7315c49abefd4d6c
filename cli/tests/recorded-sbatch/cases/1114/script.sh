#!/bin/bash
#PBS -l mem=2000mb
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
